/**
 * One check at a time of a Floodgate build or a Redis contender, as the counting tools
 * (bench/instructions.ts, bench/allocations.ts) measure it: a build directory's `limiter.check`
 * of one rule, or the `check` of the contender in bench/peers with that `short` name, on a plain
 * client of the given Redis, with a policy that admits every check of a run.
 *
 * A build directory may carry a variant after `@`, comma-separated: `memory` (the memory store
 * instead of Redis), `meter` (an OpenTelemetry SDK meter, `@opentelemetry/sdk-metrics` with a
 * reader, as an application would give it), `top0` (`topKeys: 0`); e.g. `dist/esm@memory,top0`.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { Redis } from 'ioredis';
import type * as Floodgate from '../../src/index.js';
import { REDIS_CONTENDERS } from '../peers/index.js';

/**
 * The command-line options both counting tools take (node:util parseArgs), given the default
 * number of checks counted: what is checked, how, and the internal pair naming the measuring
 * process's Redis.
 */
export function loneCheckOptions(checks: number) {
  return {
    algorithm: { type: 'string', default: 'fixed-window' },
    'in-flight': { type: 'string', default: '1' },
    keys: { type: 'string', default: '10000' },
    warmup: { type: 'string', default: '30000' },
    checks: { type: 'string', default: String(checks) },
    // Internal: set on the process that measures one name.
    worker: { type: 'string' },
    'redis-port': { type: 'string' },
  } as const;
}

/** 1 unit per check: every check is admitted during the whole run. */
const POLICY = { limit: 100_000_000, windowMs: 3_600_000 };

export type LoneCheck = (key: string) => Promise<unknown>;

const VARIANTS = new Set(['memory', 'meter', 'top0']);

/** A reader the measured process never needs to call: instruments record as under any reader. */
class IdleReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** A meter of the real SDK, as an application hands one to the limiter. */
function sdkMeter() {
  return new MeterProvider({ readers: [new IdleReader()] }).getMeter('bench');
}

/** The check of `name` (a build directory or a contender's short name) and its client, connected. */
export async function loneCheck(
  name: string,
  port: number,
  algorithm: Floodgate.AlgorithmName,
): Promise<{ check: LoneCheck; client: Redis }> {
  const contender = REDIS_CONTENDERS.find((one) => one.short === name);
  // A plain client, as the bench gives every contender (see support/redis.ts connect).
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, ...contender?.clientOptions });
  await client.connect();
  if (contender !== undefined) return { check: await contender.create(client, POLICY), client };
  const [directory = name, variant = ''] = name.split('@');
  const wanted = new Set(variant.split(',').filter(Boolean));
  for (const option of wanted) {
    if (!VARIANTS.has(option))
      throw new RangeError(`${name}: unknown variant '${option}' (memory, meter, top0)`);
  }
  const floodgate = (await import(pathToFileURL(resolve(directory, 'index.js')).href)) as typeof Floodgate;
  const limiter = floodgate.createLimiter({
    prefix: `in${process.pid}`,
    rules: { name: 'in', algorithm, limit: POLICY.limit, window: POLICY.windowMs },
    store: wanted.has('memory') ? floodgate.memoryStore() : floodgate.redisStore({ client }),
    ...(wanted.has('meter') ? { meter: sdkMeter() } : {}),
    ...(wanted.has('top0') ? { topKeys: 0 } : {}),
  });
  return { check: (key) => limiter.check(key), client };
}

/** Keeps `inFlight` checks outstanding until `count` have completed, cycling through `keys`. */
export async function drive(
  check: LoneCheck,
  keys: readonly string[],
  count: number,
  inFlight: number,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await check(keys[next++ % keys.length] as string);
    }),
  );
}
