/**
 * One check at a time of a Floodgate build or a Redis contender, as the counting tools
 * (bench/instructions.ts, bench/allocations.ts) measure it: a build directory's `limiter.check`
 * of one rule, or the `check` of the contender in bench/peers with that `short` name, on a plain
 * client of the given Redis, with a policy that admits every check of a run.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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
  const floodgate = (await import(pathToFileURL(resolve(name, 'index.js')).href)) as typeof Floodgate;
  const limiter = floodgate.createLimiter({
    prefix: `in${process.pid}`,
    rules: { name: 'in', algorithm, limit: POLICY.limit, window: POLICY.windowMs },
    store: floodgate.redisStore({ client }),
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
