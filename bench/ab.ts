/**
 * A/B of two or more builds of Floodgate, each in its own process, taking turns in short slices:
 *   npm run build && cp -r dist/esm /tmp/before      # the build to compare against
 *   (change the code) npm run build
 *   taskset -c 0 npm run bench:ab -- [options] /tmp/before dist/esm
 * Options: --store=memory|redis (default memory), --algorithm=NAME (default fixed-window),
 * --through=express (each check one request through the HTTP scenario's Express app in process,
 * keyed by client address, see support/in-process-express.ts; a build directory `none` is Express
 * without a limiter) or --through=express-middleware (through the Express middleware alone),
 * --in-flight=N checks outstanding (default 1), --keys=N distinct keys (default 10,000),
 * --rounds=N (default 30), --slice-ms=N per build per round (default 100). The rule admits
 * 100,000 per minute per key, as in the bench's many-keys workload. AB_EXEC passes flags to each
 * build's Node (e.g. AB_EXEC='--cpu-prof --cpu-prof-dir=/tmp/prof'). A build directory may end in
 * `@off` (topKeys 0), `@top` (the default topKeys), `@meter` (an OpenTelemetry SDK meter, collected
 * every second, topKeys 0) or `@both` (meter and topKeys): the cost of observability per check,
 * e.g. `npm run bench:ab -- src@off src@top src@meter src@both`.
 *
 * Why: this machine's speed moves by ±25% from second to second and for minutes at a time, so
 * two builds measured in separate runs seconds apart differ by more than most changes do. Slices
 * of ~100 ms taken in turn (forward, then backward order) fall in the same phases; the median per
 * build then shows a few percent. Pin the run to one core (`taskset -c 0`): the two vCPUs here
 * are not equally fast for minutes at a time, and a process stays where it started (unpinned,
 * about one process in four ran at half speed for a whole run). Each build runs in a process of
 * its own (forked, idle while the others measure), with its own limiter, key prefix and Redis
 * client (one throwaway server for all), driven by the bench's load loop (support/load.ts): two
 * builds loaded into one process measured ~15% apart when both were the same code, the one
 * created first slower, whatever was tried to keep their JIT feedback apart.
 *
 * Prints decisions/s and each build's own CPU µs per decision, and ratios to the
 * first. Not part of `npm run bench`: it compares versions of Floodgate, not Floodgate and peers.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import type * as Floodgate from '../src/index.js';
import { userKeys } from './support/context.js';
import { expressRequests, middlewareRequests } from './support/in-process-express.js';
import { type Operation, runLoad } from './support/load.js';
import { type RedisServer, startBenchRedis } from './support/redis.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'memory' },
    algorithm: { type: 'string', default: 'fixed-window' },
    'in-flight': { type: 'string', default: '1' },
    keys: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '30' },
    'slice-ms': { type: 'string', default: '100' },
    through: { type: 'string' },
    // Internal: a child measuring one build (see worker()).
    worker: { type: 'string' },
    'redis-port': { type: 'string' },
  },
});

function positiveInteger(name: string): number {
  const number = Number(values[name as keyof typeof values]);
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new RangeError(
      `--${name}: expected a positive integer, got '${values[name as keyof typeof values]}'`,
    );
  }
  return number;
}

const store = values.store;
if (store !== 'memory' && store !== 'redis')
  throw new RangeError(`--store: expected memory or redis, got '${store}'`);
const algorithm = values.algorithm as Floodgate.AlgorithmName;
const inFlight = positiveInteger('in-flight');
const rounds = positiveInteger('rounds');
const sliceMs = positiveInteger('slice-ms');
const keys = userKeys(positiveInteger('keys'));
const through = values.through;
if (through !== undefined && through !== 'express' && through !== 'express-middleware')
  throw new RangeError(`--through: expected express or express-middleware, got '${through}'`);
if (positionals.length < 1 && values.worker === undefined) {
  throw new TypeError('bench/ab.ts: give one or more build directories (e.g. /tmp/before dist/esm)');
}

interface Slice {
  perSecond: number;
  cpuUs: number;
}

/** What a build's process runs per operation, and how to let go of its Redis client. */
async function operationOf(
  dir: string,
  redisPort: number | undefined,
): Promise<{ operation: Operation; close(): void }> {
  if (dir === 'none') return { operation: await expressRequests(dir, undefined, keys.length), close() {} };
  const [root, variant] = dir.split('@') as [string, string | undefined];
  const floodgate = (await import(pathToFileURL(resolve(root, 'index.js')).href)) as typeof Floodgate;
  let limiterStore: Floodgate.Store = floodgate.memoryStore();
  let close = () => {};
  if (redisPort !== undefined) {
    const client = new Redis({ port: redisPort, host: '127.0.0.1' });
    close = () => client.disconnect();
    limiterStore = floodgate.redisStore({ client });
  }
  const observed = await observability(variant);
  const limiter = floodgate.createLimiter({
    prefix: `ab${process.pid}`,
    rules: { name: 'ab', algorithm, limit: 100_000, window: '1m' },
    store: limiterStore,
    ...observed.options,
  });
  const closeStore = close;
  close = () => {
    observed.close();
    closeStore();
  };
  if (through === 'express') return { operation: await expressRequests(dir, limiter, keys.length), close };
  if (through === 'express-middleware')
    return { operation: await middlewareRequests(dir, limiter, keys.length), close };
  const check = async (key: string) => (await limiter.check(key)).allowed;
  return { operation: (i) => check(keys[i % keys.length] as string), close };
}

/** A build directory's `@variant`: the limiter's meter and topKeys options. */
async function observability(
  variant: string | undefined,
): Promise<{ options: Pick<Floodgate.LimiterOptions, 'meter' | 'topKeys'>; close(): void }> {
  if (variant === undefined) return { options: {}, close() {} };
  if (variant === 'off') return { options: { topKeys: 0 }, close() {} };
  if (variant === 'top') return { options: {}, close() {} };
  if (variant !== 'meter' && variant !== 'both') {
    throw new RangeError(`build @${variant}: expected @off, @top, @meter or @both`);
  }
  const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
  class PullReader extends MetricReader {
    protected async onForceFlush(): Promise<void> {}
    protected async onShutdown(): Promise<void> {}
  }
  const reader = new PullReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('bench');
  // A collector's usual pace is once a minute; once a second counts its cost too.
  const timer = setInterval(() => void reader.collect(), 1000);
  return {
    options: { meter, ...(variant === 'meter' ? { topKeys: 0 } : {}) },
    close: () => clearInterval(timer),
  };
}

/** A build's own process: waits for a slice length, measures, answers; see `main` below. */
async function worker(dir: string, redisPort: number | undefined): Promise<void> {
  const { operation, close } = await operationOf(dir, redisPort);
  process.on('message', async (ms: number) => {
    if (ms === 0) {
      close();
      process.disconnect();
      return;
    }
    // The bench's own loop (a full GC before each slice), CPU counted over the measured part only.
    let cpuBefore = process.cpuUsage();
    const result = await runLoad(operation, {
      inFlight,
      seconds: ms / 1000,
      warmupSeconds: 0,
      latency: false,
      betweenPhases: async () => {
        cpuBefore = process.cpuUsage();
      },
    });
    const cpu = process.cpuUsage(cpuBefore);
    process.send?.({
      perSecond: result.perSecond,
      cpuUs: (cpu.user + cpu.system) / Math.max(1, result.ops),
    });
  });
  process.send?.('ready');
}

interface Build {
  readonly dir: string;
  readonly child: ChildProcess;
  readonly slices: Slice[];
}

function slice(build: Build, ms: number): Promise<Slice> {
  return new Promise((done, fail) => {
    const { child } = build;
    const failed = (error: Error) => {
      child.off('message', answered);
      fail(error);
    };
    const answered = (message: unknown) => {
      child.off('error', failed);
      done(message as Slice);
    };
    child.once('message', answered);
    child.once('error', failed);
    child.send(ms);
  });
}

async function main(): Promise<void> {
  if (availableParallelism() > 1) {
    console.log('note: not pinned to one core; run under `taskset -c 0` for comparable processes');
  }
  let server: RedisServer | undefined;
  const builds: Build[] = [];
  try {
    if (store === 'redis') server = await startBenchRedis();
    for (const dir of positionals) {
      const args = [...process.argv.slice(2).filter((arg) => arg.startsWith('--')), `--worker=${dir}`];
      if (server !== undefined) args.push(`--redis-port=${server.port}`);
      const child = fork(fileURLToPath(import.meta.url), args, {
        execArgv: ['--import', 'tsx', ...(process.env.AB_EXEC ?? '').split(' ').filter(Boolean)],
      });
      await new Promise((ready) => child.once('message', ready));
      builds.push({ dir, child, slices: [] });
    }
    // Warm-up: every build reaches its optimised code before anything counts.
    for (const build of builds) await slice(build, 1000);
    for (let round = 0; round < rounds; round++) {
      for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
        build.slices.push(await slice(build, sliceMs));
      }
    }
    report(builds);
  } finally {
    for (const build of builds) build.child.connected && build.child.send(0);
    await server?.stop();
  }
}

function report(builds: readonly Build[]): void {
  const median = (numbers: number[]) =>
    [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] as number;
  const first = builds[0] as Build;
  const baseRate = median(first.slices.map((each) => each.perSecond));
  const baseCpu = median(first.slices.map((each) => each.cpuUs));
  console.log(
    `${store} store, ${algorithm}, ${keys.length.toLocaleString('en-US')} keys, ${inFlight} in flight; median of ${rounds} slices of ${sliceMs} ms per build`,
  );
  for (const build of builds) {
    const rate = median(build.slices.map((each) => each.perSecond));
    const cpu = median(build.slices.map((each) => each.cpuUs));
    console.log(
      `${build.dir.padEnd(24)} ${Math.round(rate).toLocaleString('en-US').padStart(11)}/s ×${(rate / baseRate).toFixed(3)}   CPU ${cpu.toFixed(2)} µs/decision ×${(cpu / baseCpu).toFixed(3)}`,
    );
  }
}

if (values.worker !== undefined) {
  await worker(values.worker, values['redis-port'] === undefined ? undefined : Number(values['redis-port']));
} else {
  await main();
}
