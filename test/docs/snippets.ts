/**
 * The code blocks of README.md and docs/*.md as a user copies them: every ```ts and ```js block is
 * written into a project that has the packed `floodgate` installed, type-checked there by one tsc
 * run (strict, nodenext), and run, one after another, in one Node process with a time bound each.
 * A block whose info string says `no-run` (a server that listens forever, a cluster on hosts that
 * do not exist here) is type-checked only.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Snippet {
  /** The file name in the project, after the document and the block's first line. */
  readonly name: string;
  /** Where the block starts, for messages: `docs/http.md:42`. */
  readonly origin: string;
  readonly source: string;
  readonly run: boolean;
}

const FENCE = /^```(ts|js)((?:[ \t]+[\w-]+)*)[ \t]*$/;

/** The ```ts/```js blocks of one Markdown text; other languages (sh, yaml, json…) are left out. */
export function extractSnippets(document: string, text: string): Snippet[] {
  const lines = text.split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '');
    if (!open) {
      // Skip over other fenced blocks so a ``` inside them is never read as an opening.
      if (lines[i]?.startsWith('```')) while (++i < lines.length && lines[i] !== '```');
      continue;
    }
    const start = i + 1; // the fence's line, counted from 1
    while (++i < lines.length && lines[i] !== '```');
    if (i >= lines.length) throw new Error(`${document}:${start}: code block never closed`);
    const flags = (open[2] ?? '').trim().split(/\s+/).filter(Boolean);
    const unknown = flags.filter((flag) => flag !== 'no-run');
    if (unknown.length > 0) throw new Error(`${document}:${start}: unknown flag ${unknown.join(' ')}`);
    const base = document.replace(/\.md$/, '').replace(/[^\w]+/g, '-');
    snippets.push({
      name: `${base}-${start}.${open[1]}`,
      origin: `${document}:${start}`,
      source: lines.slice(start, i).join('\n'),
      run: !flags.includes('no-run'),
    });
  }
  return snippets;
}

/** Every snippet of README.md and docs/*.md under `root`. */
export function documentationSnippets(root: string): Snippet[] {
  const documents = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((file) => file.endsWith('.md'))
      .sort()
      .map((file) => `docs/${file}`),
  ];
  return documents.flatMap((document) =>
    extractSnippets(document, readFileSync(join(root, document), 'utf8')),
  );
}

/**
 * Packages the snippets import besides floodgate, linked from the repository's node_modules, with
 * the module floodgate's Express types augment (npm hoists it next to @types/express for a user).
 */
const LINKED = [
  '@opentelemetry/api',
  'ioredis',
  'redis',
  'express',
  'fastify',
  '@types/node',
  '@types/express',
  '@types/express-serve-static-core',
  'hono',
  '@hono/node-server',
  'koa',
  '@types/koa',
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/platform-express',
  '@nestjs/throttler',
  'reflect-metadata',
  'rxjs',
];

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    // NestJS decorators (the legacy form Nest is written for).
    experimentalDecorators: true,
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    lib: ['es2024', 'dom'],
    types: ['node'],
    allowJs: true,
    checkJs: true,
    skipLibCheck: true,
    rootDir: 'src',
    outDir: 'out',
  },
  include: ['src'],
};

// Runs each compiled snippet in turn; a snippet is done when its module (top-level await
// included) has evaluated. Open handles (a Redis client) are left to the final exit.
const RUNNER = `
import { writeFileSync } from 'node:fs';
const [results, timeoutMs, ...files] = process.argv.slice(2);
const outcomes = {};
let current;
process.on('unhandledRejection', (error) => { outcomes[current] ??= String(error?.stack ?? error); });
process.on('uncaughtException', (error) => { outcomes[current] ??= String(error?.stack ?? error); });
for (const file of files) {
  current = file;
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve('timed out after ' + timeoutMs + ' ms'), Number(timeoutMs)); });
  const outcome = await Promise.race([import('./out/' + file).then(() => 'ok', (error) => String(error?.stack ?? error)), timeout]);
  clearTimeout(timer);
  outcomes[file] ??= outcome;
}
writeFileSync(results, JSON.stringify(outcomes));
process.exit(0);
`;

export interface SnippetRun {
  /** tsc's report, empty when every snippet type-checks. */
  readonly typeErrors: string;
  /** Per run snippet (by origin): 'ok', or what went wrong. */
  readonly outcomes: Record<string, string>;
}

/**
 * Type-checks and runs `snippets` in `dir`, a new folder inside a project whose node_modules holds
 * floodgate. `env` reaches the snippets (REDIS_URL).
 */
export async function checkSnippets(options: {
  readonly root: string;
  readonly dir: string;
  readonly snippets: readonly Snippet[];
  readonly env: NodeJS.ProcessEnv;
  readonly timeoutMs: number;
}): Promise<SnippetRun> {
  const { root, dir, snippets } = options;
  await mkdir(join(dir, 'src'), { recursive: true });
  const modules = join(dir, '..', 'node_modules');
  for (const name of LINKED) {
    // Scoped packages (@types/…, @nestjs/…) go into their scope's folder.
    await mkdir(dirname(join(modules, name)), { recursive: true });
    await symlink(join(root, 'node_modules', name), join(modules, name), 'dir').catch((error) => {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    });
  }
  await writeFile(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  await writeFile(join(dir, 'run.mjs'), RUNNER);
  // Each snippet is a module of its own, even one with neither import nor export.
  for (const snippet of snippets)
    await writeFile(join(dir, 'src', snippet.name), `${snippet.source}\nexport {};\n`);
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const typeErrors = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir }).then(
    () => '',
    (error: { stdout: string }) => error.stdout,
  );
  if (typeErrors) return { typeErrors, outcomes: {} };
  const runnable = snippets.filter((snippet) => snippet.run);
  const results = join(dir, 'results.json');
  const compiled = runnable.map((snippet) => snippet.name.replace(/\.ts$/, '.js'));
  await run(process.execPath, ['run.mjs', results, String(options.timeoutMs), ...compiled], {
    cwd: dir,
    env: { ...process.env, ...options.env },
  });
  const byFile = JSON.parse(await readFile(results, 'utf8')) as Record<string, string>;
  const outcomes: Record<string, string> = {};
  for (const [i, snippet] of runnable.entries())
    outcomes[snippet.origin] = byFile[compiled[i] ?? ''] ?? 'not run';
  return { typeErrors, outcomes };
}
