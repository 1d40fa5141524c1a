/**
 * What a decision costs Redis: commands per decision (INFO commandstats delta / decisions, split
 * into requests the client sent and all commands Redis executed, script calls included), and
 * bytes of Redis memory per user key (MEMORY USAGE summed over every key written, after
 * `requestsPerKey` admitted requests per key). Counted, not timed: the numbers are exact.
 */
import { stringCounter } from '../peers/ceilings.js';
import { FLOODGATE_ALGORITHMS, floodgateRedis } from '../peers/floodgate.js';
import { REDIS_PEERS } from '../peers/index.js';
import type { Contender } from '../peers/types.js';
import { type BenchContext, userKeys } from '../support/context.js';
import { runCount } from '../support/load.js';
import { commandCounts, connect, memoryOfAllKeys } from '../support/redis.js';

export interface CommandCost {
  /** Requests the client sent to Redis, per decision. */
  requests: number;
  /** Commands Redis executed (each redis.call inside a script counts), per decision. */
  executed: number;
  /** Share of decisions that were "allowed". */
  allowedShare: number;
  decisions: number;
}

export interface RedisCost {
  contender: Pick<Contender, 'name' | 'short' | 'role'>;
  /** Under the limit, many keys. */
  many: CommandCost;
  /** One key far over its limit. */
  flood: CommandCost;
  /** MEMORY USAGE per user key, every Redis key of that user included. */
  bytesPerKey: number;
  /** Redis keys per user key. */
  redisKeysPerKey: number;
}

const IN_FLIGHT = 64;
const FLOOD_LIMIT = 100;
/**
 * Long enough that no state expires before MEMORY USAGE reads it (token-bucket and gcra keep a
 * key only until the bucket is full again), so every limiter is measured holding 100 requests.
 */
export const COST_WINDOW_MS = 3_600_000;

async function costOf(
  context: BenchContext,
  contender: Contender,
  limit: number,
  total: number,
  keyOf: (i: number) => string,
): Promise<CommandCost> {
  const client = await connect(context.server, contender.clientOptions);
  try {
    const check = await contender.create(client, { limit, windowMs: COST_WINDOW_MS });
    // Get the contender's script cached (a first NOSCRIPT + EVAL would be charged to whoever runs first).
    await check('warmup');
    await context.admin.flushall();
    const before = await commandCounts(context.admin);
    const allowed = await runCount((i) => check(keyOf(i)), total, IN_FLIGHT);
    const after = await commandCounts(context.admin);
    return {
      requests: (after.requests - before.requests) / total,
      executed: (after.executed - before.executed) / total,
      allowedShare: allowed / total,
      decisions: total,
    };
  } finally {
    client.disconnect();
  }
}

export async function runRedisCost(context: BenchContext): Promise<RedisCost[]> {
  const { admin, settings } = context;
  const keys = userKeys(settings.memoryKeys);
  const contenders = [...FLOODGATE_ALGORITHMS.map(floodgateRedis), ...REDIS_PEERS, stringCounter];
  const rows: RedisCost[] = [];
  for (const contender of contenders) {
    // Interleaved, so requests to one key are spread out as they would be in real traffic.
    const many = await costOf(
      context,
      contender,
      settings.requestsPerKey * 10,
      keys.length * settings.requestsPerKey,
      (i) => keys[i % keys.length] as string,
    );
    const memory = await memoryOfAllKeys(admin);
    const flood = await costOf(
      context,
      contender,
      FLOOD_LIMIT,
      FLOOD_LIMIT * (settings.quick ? 20 : 100),
      () => 'hot',
    );
    const { name, short, role } = contender;
    const row: RedisCost = {
      contender: { name, short, role },
      many,
      flood,
      bytesPerKey: memory.bytes / keys.length,
      redisKeysPerKey: memory.keys / keys.length,
    };
    context.log(
      `redis-cost ${name.padEnd(52)} ${row.bytesPerKey.toFixed(0).padStart(6)} B/key  requests/decision ${many.requests.toFixed(3)} (flood ${flood.requests.toFixed(3)})  executed ${many.executed.toFixed(2)} (flood ${flood.executed.toFixed(2)})`,
    );
    rows.push(row);
  }
  return rows;
}
