/**
 * The table "What each part may import" in docs/architecture.md, held: every import in src/ (type
 * ones too, which the table covers) goes from a part to one its row allows, and the table's rows
 * are the parts named here. A lower part importing a higher one fails with the file and import.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importsOf, resolveImport } from '../support/module-graph.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');

const LEAVES = [
  'describe.ts',
  'errors.ts',
  'duration.ts',
  'options.ts',
  'emitter.ts',
  'turns.ts',
  'lifecycle.ts',
];

/** Each part: the table's name for it, and the source paths (relative to src/) it holds. */
const PARTS: { name: string; holds: (path: string) => boolean }[] = [
  { name: 'leaf', holds: (path) => LEAVES.includes(path) },
  { name: 'algorithms/', holds: (path) => path.startsWith('algorithms/') },
  { name: 'calendar/', holds: (path) => path.startsWith('calendar/') },
  { name: 'base/', holds: (path) => path.startsWith('base/') },
  { name: 'rules.ts', holds: (path) => path === 'rules.ts' },
  { name: 'stores/types.ts', holds: (path) => path === 'stores/types.ts' },
  { name: 'stores/queue-types.ts', holds: (path) => path === 'stores/queue-types.ts' },
  { name: 'stores/memory/', holds: (path) => path.startsWith('stores/memory/') },
  { name: 'stores/redis/', holds: (path) => path.startsWith('stores/redis/') },
  { name: 'resilience/', holds: (path) => path.startsWith('resilience/') },
  { name: 'core/', holds: (path) => path.startsWith('core/') },
  { name: 'telemetry/', holds: (path) => path.startsWith('telemetry/') },
  { name: 'limiter.ts', holds: (path) => path === 'limiter.ts' },
  { name: 'http/', holds: (path) => path.startsWith('http/') },
  { name: 'scheduler/', holds: (path) => path.startsWith('scheduler/') },
  { name: 'adaptive/', holds: (path) => path.startsWith('adaptive/') },
  { name: 'bottleneck/', holds: (path) => path.startsWith('bottleneck/') },
  { name: 'index.ts', holds: (path) => path === 'index.ts' },
  { name: 'internal.ts', holds: (path) => path === 'internal.ts' },
  { name: 'cli/', holds: (path) => path.startsWith('cli/') },
];

/** What a part may import: parts, single files, or parts whose types only (`types:`). */
type Allowed = string | { types: string };

const LOW = ['leaf', 'algorithms/', 'calendar/', 'base/'];
const STORE = [...LOW, 'stores/types.ts', 'stores/queue-types.ts'];
const BELOW_LIMITER = [
  ...STORE,
  'rules.ts',
  'stores/memory/',
  'stores/redis/',
  'resilience/',
  'core/',
  'telemetry/',
];
const BELOW_ENTRIES = [...BELOW_LIMITER, 'limiter.ts', 'http/', 'scheduler/', 'adaptive/'];

/** The table's rows, as docs/architecture.md has them; a part may always import itself. */
const MAY_IMPORT: Record<string, Allowed[]> = {
  leaf: [],
  'algorithms/': [],
  'calendar/': [],
  'base/': ['leaf', 'algorithms/'],
  'rules.ts': LOW,
  'stores/types.ts': ['base/', 'stores/queue-types.ts'],
  'stores/queue-types.ts': ['base/'],
  'stores/memory/': STORE,
  'stores/redis/': STORE,
  'resilience/': ['leaf', 'base/', 'stores/types.ts'],
  'core/': [...STORE, 'rules.ts', { types: 'resilience/' }],
  'telemetry/': ['leaf', 'rules.ts', { types: 'core/' }, { types: 'stores/types.ts' }],
  'limiter.ts': BELOW_LIMITER,
  'http/': [...STORE, 'rules.ts', 'core/', 'limiter.ts', 'adaptive/'],
  'scheduler/': [...STORE, 'rules.ts', 'core/', 'limiter.ts'],
  'adaptive/': ['leaf', 'rules.ts'],
  'bottleneck/': [
    'leaf',
    'scheduler/',
    'base/',
    'stores/memory/',
    'stores/redis/',
    { types: 'stores/types.ts' },
    { types: 'rules.ts' },
  ],
  'index.ts': BELOW_ENTRIES,
  'internal.ts': BELOW_ENTRIES,
  'cli/': ['index.ts', 'internal.ts', 'http/fastify.ts'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

function partOf(path: string): string {
  const part = PARTS.find((candidate) => candidate.holds(path));
  if (part === undefined) throw new Error(`src/${path} belongs to no part of the table`);
  return part.name;
}

function allows(from: string, to: string, path: string, typeOnly: boolean): boolean {
  if (from === to) return true;
  return (MAY_IMPORT[from] ?? []).some((allowed) =>
    typeof allowed === 'string' ? allowed === to || allowed === path : typeOnly && allowed.types === to,
  );
}

describe('docs/architecture.md: what each part may import', () => {
  it('every import in src/ goes where its part may import', () => {
    const crossings: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const path = relative(SRC, file);
      const from = partOf(path);
      for (const { specifier, typeOnly } of importsOf(file)) {
        if (!specifier.startsWith('.')) continue;
        const target = relative(SRC, resolveImport(file, specifier));
        const to = partOf(target);
        if (!allows(from, to, target, typeOnly)) crossings.push(`${path} (${from}) -> ${target} (${to})`);
      }
    }
    expect(crossings).toEqual([]);
  });

  it("the page's table names exactly the parts held here", () => {
    const page = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
    const section = page.split('## What each part may import')[1]?.split('\n## ')[0] ?? '';
    const firstCells = [...section.matchAll(/^\| (.+?) +\|/gm)].map(([, cell = '']) => cell).slice(2);
    const named = firstCells.flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map(([, name = '']) => name));
    const parts = [...LEAVES, ...PARTS.map((part) => part.name).filter((name) => name !== 'leaf')];
    expect(named.sort()).toEqual(parts.sort());
  });
});
