/**
 * The package as users get it: pack the tarball (its `prepack` builds it), install it into a fresh
 * project, then import it from ESM and require it from CommonJS, run a check in each, type-check a
 * TypeScript consumer under both module conditions, follow every relative link of the packed
 * Markdown inside the package, and type-check and run every code snippet of README.md and docs/
 * against it. The only slow file of the suite.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokenLinks } from './docs/links.js';
import { checkSnippets, documentationSnippets } from './docs/snippets.js';
import { startRedisServer } from './support/redis-server.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const SLOW = 180_000;

interface PackedFile {
  path: string;
}

let work: string;
let project: string;
let installed: string;
let packedFiles: string[];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'floodgate-package-'));
  project = join(work, 'consumer');
  installed = join(project, 'node_modules', 'floodgate');
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT });
  const [packed] = JSON.parse(stdout) as [{ filename: string; files: PackedFile[] }];
  packedFiles = packed.files.map((file) => file.path);
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--offline', join(work, packed.filename)], {
    cwd: project,
  });
}, SLOW);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const CHECK = `
const limiter = createLimiter({
  store: memoryStore({ maxKeys: 10 }),
  rules: [
    { name: 'burst', algorithm: 'gcra', limit: 2, window: '1s' },
    { name: 'minute', algorithm: 'sliding-log', limit: 5, window: '1m' },
  ],
});
const decisions = [];
for (let i = 0; i < 3; i++) decisions.push(await limiter.check('user'));
console.log(JSON.stringify(decisions.map(({ allowed, remaining, rule }) => ({ allowed, remaining, rule }))));
`;

const EXPECTED = [
  { allowed: true, remaining: 1, rule: 'burst' },
  { allowed: true, remaining: 0, rule: 'burst' },
  { allowed: false, remaining: 0, rule: 'burst' },
];

async function node(file: string, source: string): Promise<string> {
  await writeFile(join(project, file), source);
  const { stdout } = await run(process.execPath, [file], { cwd: project });
  return stdout.trim();
}

describe('the packed tarball', () => {
  it('holds the built files, the .proto files and the documentation only, and the package has no runtime dependencies', async () => {
    for (const file of [
      'dist/esm/index.js',
      'dist/esm/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
    ])
      expect(packedFiles).toContain(file);
    expect(packedFiles).toContain('dist/esm/package.json');
    expect(packedFiles).toContain('dist/cjs/package.json');
    // The Envoy rate limit service loads these at run time (serve --grpc-port).
    for (const file of [
      'proto/envoy/service/ratelimit/v3/rls.proto',
      'proto/envoy/extensions/common/ratelimit/v3/ratelimit.proto',
      'proto/envoy/config/core/v3/base.proto',
      'proto/envoy/type/v3/ratelimit_unit.proto',
      'proto/grpc/health/v1/health.proto',
    ])
      expect(packedFiles).toContain(file);
    // Every page of docs/ (which the README's documentation map links) and the images the pages
    // show, and nothing else of it.
    const pages = readdirSync(join(ROOT, 'docs'))
      .filter((file) => file.endsWith('.md') || file.endsWith('.png'))
      .map((file) => `docs/${file}`);
    expect(packedFiles.filter((file) => file.startsWith('docs/')).sort()).toEqual(pages.sort());
    expect(
      packedFiles.filter(
        (file) =>
          !file.startsWith('dist/') &&
          !file.startsWith('proto/') &&
          !file.startsWith('docs/') &&
          file !== 'package.json',
      ),
    ).toEqual(packedFiles.filter((file) => ['README.md', 'BENCHMARKS.md', 'LICENSE'].includes(file)));
    expect(
      packedFiles.filter((file) => file.startsWith('proto/')).every((file) => file.endsWith('.proto')),
    ).toBe(true);
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
    expect(manifest.dependencies ?? {}).toEqual({});
  });

  it('every relative link of its README and docs pages reaches a file and heading inside it', () => {
    const packed = new Set(packedFiles);
    const read = (path: string) => readFileSync(join(installed, path), 'utf8');
    const exists = (path: string) => packed.has(path);
    const pages = packedFiles.filter((file) => file.endsWith('.md'));
    expect(pages).toContain('README.md');
    const broken = pages.flatMap((page) =>
      brokenLinks(page, read(page), { exists, read }).map((link) => `${page}: ${link}`),
    );
    expect(broken).toEqual([]);
  });

  it('names its repository, home page and issue tracker, so the registry resolves what it shows', async () => {
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({
      repository: { type: 'git', url: 'git+https://github.com/floodgate-rl/floodgate.git' },
      homepage: 'https://github.com/floodgate-rl/floodgate#readme',
      bugs: { url: 'https://github.com/floodgate-rl/floodgate/issues' },
    });
  });

  it('every export target that has a source exists, types first, for import and require', async () => {
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
    const exports = manifest.exports as Record<string, string | Record<string, Record<string, string>>>;
    expect(Object.keys(exports)).toContain('.');
    for (const [subpath, target] of Object.entries(exports)) {
      if (typeof target === 'string') {
        expect(existsSync(join(installed, target)), subpath).toBe(true);
        continue;
      }
      // Subpaths whose sources are not in this tree yet (e.g. adapters built elsewhere) are skipped.
      const source = join(
        ROOT,
        'src',
        `${(target.import?.default ?? '').replace(/^\.\/dist\/esm\//, '').replace(/\.js$/, '')}.ts`,
      );
      if (subpath !== '.' && !existsSync(source)) continue;
      for (const condition of ['import', 'require']) {
        const files = target[condition] as Record<string, string>;
        expect(Object.keys(files), `${subpath} ${condition}`).toEqual(['types', 'default']);
        for (const file of Object.values(files))
          expect(existsSync(join(installed, file)), `${subpath} ${file}`).toBe(true);
      }
    }
  });

  it(
    'imports from an ES module and checks',
    async () => {
      const output = await node(
        'check.mjs',
        `import { createLimiter, memoryStore } from 'floodgate';\n${CHECK}`,
      );
      expect(JSON.parse(output)).toEqual(EXPECTED);
    },
    SLOW,
  );

  it(
    'requires from CommonJS and checks',
    async () => {
      const source = `const { createLimiter, memoryStore, redisStore, parseDuration } = require('floodgate');
if (typeof redisStore !== 'function' || parseDuration('1m', 'x') !== 60000) throw new Error('exports missing');
if (require('floodgate/package.json').name !== 'floodgate') throw new Error('package.json not exported');
(async () => {${CHECK}})();`;
      const output = await node('check.cjs', source);
      expect(JSON.parse(output)).toEqual(EXPECTED);
    },
    SLOW,
  );

  it(
    'floodgate/bottleneck: require and import give the class, and it runs a job',
    async () => {
      const run = `const limiter = new Bottleneck({ maxConcurrent: 1, minTime: 10 });
if (Bottleneck.default !== Bottleneck || typeof Bottleneck.Group !== 'function') throw new Error('exports missing');
limiter.schedule((n) => n * 2, 21).then((answer) => console.log(JSON.stringify(answer)));`;
      const required = await node(
        'bottleneck.cjs',
        `const { Bottleneck } = require('floodgate/bottleneck');
if (require('floodgate/bottleneck').default !== Bottleneck) throw new Error('no default');
${run}`,
      );
      expect(JSON.parse(required)).toBe(42);
      const imported = await node(
        'bottleneck.mjs',
        `import Bottleneck from 'floodgate/bottleneck';
${run}`,
      );
      expect(JSON.parse(imported)).toBe(42);
    },
    SLOW,
  );

  it(
    'type-checks a TypeScript consumer under both the import and the require condition',
    async () => {
      const consumer = (importLine: string) => `${importLine}
const limiter = createLimiter({ rules: { algorithm: 'token-bucket', limit: 10, window: '1s', burst: 20 } });
export const decision: Promise<Decision> = limiter.check('user', { cost: 2 });
// @ts-expect-error: not an algorithm
createLimiter({ rules: { algorithm: 'leaky-bucket', limit: 1, window: 1 } });
// @ts-expect-error: not a duration
createLimiter({ rules: { algorithm: 'gcra', limit: 1, window: '1 week' } });
`;
      await writeFile(
        join(project, 'esm.mts'),
        consumer("import { createLimiter, type Decision } from 'floodgate';"),
      );
      await writeFile(
        join(project, 'cjs.cts'),
        consumer(
          "import floodgate = require('floodgate');\nconst { createLimiter } = floodgate;\ntype Decision = floodgate.Decision;",
        ),
      );
      const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
      const { stdout } = await run(process.execPath, [TSC, ...args, '--listFiles', 'esm.mts', 'cjs.cts'], {
        cwd: project,
      }).catch((error: { stdout: string }) => {
        throw new Error(`tsc failed:\n${error.stdout}`);
      });
      // One consumer was typed by the ESM declarations, the other by the CommonJS ones.
      const files = stdout.split('\n');
      expect(files.some((file) => file.endsWith('node_modules/floodgate/dist/esm/index.d.ts'))).toBe(true);
      expect(files.some((file) => file.endsWith('node_modules/floodgate/dist/cjs/index.d.ts'))).toBe(true);
    },
    SLOW,
  );
});

describe('the code snippets of README.md and docs/', () => {
  it(
    'type-check (strict, nodenext) and run against the packed package, on a throwaway Redis',
    async () => {
      const snippets = documentationSnippets(ROOT);
      expect(snippets.length).toBeGreaterThan(10);
      const server = await startRedisServer();
      try {
        const { typeErrors, outcomes } = await checkSnippets({
          root: ROOT,
          dir: join(project, 'docs-snippets'),
          snippets,
          env: { REDIS_URL: server.url },
          timeoutMs: 15_000,
        });
        expect(typeErrors).toBe('');
        const runnable = snippets.filter((snippet) => snippet.run).map((snippet) => snippet.origin);
        expect(outcomes).toEqual(Object.fromEntries(runnable.map((origin) => [origin, 'ok'])));
      } finally {
        await server.stop();
      }
    },
    SLOW,
  );
});
