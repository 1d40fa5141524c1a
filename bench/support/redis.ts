/**
 * The bench's own Redis: a throwaway redis-server on a free port (the same helper the tests use),
 * plain ioredis clients for every contender, and the two server-side measurements the report
 * needs: commands executed (INFO commandstats) and bytes per key (MEMORY USAGE).
 */
import { Redis, type RedisOptions } from 'ioredis';
import { type RedisServer, startRedisServer } from '../../test/support/redis-server.js';

export type { RedisServer };

/**
 * Commands a client sends over the wire. Everything else counted in INFO commandstats was run by
 * a script (redis.call), because every contender here talks to Redis through scripts only.
 */
const REQUEST_COMMANDS = new Set([
  'eval',
  'evalsha',
  'eval_ro',
  'evalsha_ro',
  'fcall',
  'fcall_ro',
  'ping',
  'multi',
  'exec',
  'script|load',
  'script|exists',
  'function|load',
]);
/** Commands the harness itself sends between phases; never charged to a contender. */
const HARNESS_COMMANDS = new Set(['info', 'config|resetstat', 'flushall', 'scan', 'memory|usage', 'dbsize']);

export async function startBenchRedis(): Promise<RedisServer> {
  // No persistence, no eviction: what is measured is the limiter's work and footprint alone.
  return startRedisServer({ args: ['--maxmemory', '0', '--loglevel', 'warning'] });
}

/** A plain ioredis client with default options (the "same plain client for everyone"). */
export async function connect(server: RedisServer, options: RedisOptions = {}): Promise<Redis> {
  const client = new Redis({ port: server.port, host: '127.0.0.1', lazyConnect: true, ...options });
  await client.connect();
  return client;
}

/** Counts from INFO commandstats, split into requests (sent by clients) and all commands executed. */
export interface CommandCounts {
  requests: number;
  executed: number;
}

export async function commandCounts(admin: Redis): Promise<CommandCounts> {
  const info = await admin.info('commandstats');
  let requests = 0;
  let executed = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const name = match[1] as string;
    const calls = Number(match[2]);
    if (HARNESS_COMMANDS.has(name)) continue;
    executed += calls;
    if (REQUEST_COMMANDS.has(name)) requests += calls;
  }
  return { requests, executed };
}

/** Sum of MEMORY USAGE (all samples) over every key in the database, and the number of keys. */
export async function memoryOfAllKeys(admin: Redis): Promise<{ bytes: number; keys: number }> {
  let bytes = 0;
  let keys = 0;
  let cursor = '0';
  do {
    const [next, batch] = await admin.scan(cursor, 'COUNT', 1000);
    cursor = next;
    const pipeline = admin.pipeline();
    for (const key of batch) pipeline.memory('USAGE', key, 'SAMPLES', '0');
    for (const [error, usage] of (await pipeline.exec()) ?? []) {
      if (error) throw error;
      if (typeof usage === 'number') {
        bytes += usage;
        keys++;
      }
    }
  } while (cursor !== '0');
  return { bytes, keys };
}

/** CPU seconds the Redis server has used (user + system, main thread and I/O included). */
export async function redisCpuSeconds(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? Number.NaN);
  const system = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? Number.NaN);
  return user + system;
}

export async function redisVersion(admin: Redis): Promise<string> {
  const info = await admin.info('server');
  return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
}
