/**
 * Bench settings: flags and environment in, one resolved object out.
 *   --quick              a ~30 s smoke run (short phases, fewer keys)
 *   --seconds=N          measured seconds per run (env BENCH_SECONDS; default 2, quick 0.2)
 *   --only=a,b           run only these scenarios (env BENCH_ONLY)
 *   --out=FILE           where the report goes (default BENCHMARKS.md)
 */
import { relative } from 'node:path';

export const SCENARIOS = [
  'decisions',
  'redis-cost',
  'memory-store',
  'http',
  'clock-skew',
  'hot-key',
  'scheduler',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface Settings {
  quick: boolean;
  /** Measured seconds per run. */
  seconds: number;
  /** Rounds over the Redis contenders per decisions table (each row keeps its best round). */
  decisionRounds: number;
  /** Unmeasured seconds before each run. */
  warmupSeconds: number;
  /** Checks in flight for the decision runs. */
  inFlight: readonly number[];
  /** Distinct keys cycled through in the "many keys" workload. */
  manyKeys: number;
  /** Distinct keys of the memory store's large workload: more than a limiter's default caches hold. */
  largeKeys: number;
  /** Keys written for the memory-per-key figure, and requests per key. */
  memoryKeys: number;
  requestsPerKey: number;
  /** autocannon connections and seconds per HTTP run, and rounds over all variants (median kept). */
  httpConnections: number;
  httpSeconds: number;
  httpRounds: number;
  /** Windows of the virtual-time clock-skew runs, and of the real-time one (on Redis TIME). */
  skewWindowsMs: readonly number[];
  skewRealWindowMs: number;
  scenarios: readonly ScenarioName[];
  out: string;
  /** The command line, for the report. */
  command: string;
}

function flag(args: readonly string[], name: string): string | undefined {
  const prefix = `--${name}=`;
  return args.find((arg) => arg.startsWith(prefix))?.slice(prefix.length);
}

function positive(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0)
    throw new RangeError(`${name}: expected a positive number, got '${value}'`);
  return number;
}

export function parseSettings(args: readonly string[], env: NodeJS.ProcessEnv): Settings {
  for (const arg of args) {
    if (!/^--(quick|seconds=.*|only=.*|out=.*)$/.test(arg)) {
      throw new TypeError(
        `unknown argument '${arg}'; use --quick, --seconds=N, --only=${SCENARIOS.join(',')}, --out=FILE`,
      );
    }
  }
  const quick = args.includes('--quick');
  const seconds =
    positive(flag(args, 'seconds'), '--seconds') ??
    positive(env.BENCH_SECONDS, 'BENCH_SECONDS') ??
    (quick ? 0.2 : 2);
  const only = flag(args, 'only') ?? env.BENCH_ONLY;
  const scenarios =
    only === undefined || only === '' ? [...SCENARIOS] : only.split(',').map((name) => name.trim());
  for (const name of scenarios) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      throw new RangeError(`--only: unknown scenario '${name}'; the scenarios are ${SCENARIOS.join(', ')}`);
    }
  }
  const envPart = ['BENCH_SECONDS', 'BENCH_ONLY']
    .filter((name) => env[name] !== undefined && env[name] !== '')
    .map((name) => `${name}=${env[name]} `)
    .join('');
  const viaNpm = env.npm_lifecycle_event === 'bench';
  const command = viaNpm
    ? `${envPart}npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`
    : `${envPart}node --import tsx ${relative(process.cwd(), process.argv[1] ?? 'bench/run.ts')} ${args.join(' ')}`.trim();
  return {
    quick,
    seconds,
    decisionRounds: quick ? 1 : 2,
    warmupSeconds: quick ? Math.min(0.1, seconds) : Math.min(1, seconds / 3),
    inFlight: [1, 64],
    manyKeys: 10_000,
    largeKeys: quick ? 20_000 : 100_000,
    memoryKeys: quick ? 50 : 500,
    requestsPerKey: 100,
    httpConnections: 64,
    httpSeconds: quick ? Math.max(0.5, seconds) : seconds,
    httpRounds: quick ? 1 : 5,
    skewWindowsMs: quick ? [5_000] : [5_000, 10_000, 60_000],
    skewRealWindowMs: quick ? 1000 : 3000,
    scenarios: scenarios as ScenarioName[],
    out: flag(args, 'out') ?? 'BENCHMARKS.md',
    command,
  };
}
