/**
 * Script runners for tests that drive Redis with a simulated clock. The script sets each key's
 * TTL in simulated milliseconds, but Redis expires keys on its real clock: on a slow machine a key
 * could vanish between two simulated steps that are 1 ms apart. These runners PERSIST every key
 * the script touched in the same MULTI, so only simulated time decides; state kept past its TTL
 * must (and does) decide exactly like no state.
 */
import type { Redis } from 'ioredis';
import type { createClient } from 'redis';
import type { ScriptRunner } from '../../src/index.js';

export function persistingIoRedisRunner(redis: Redis): ScriptRunner {
  async function run(
    command: 'evalsha' | 'eval',
    body: string,
    keys: readonly string[],
    args: readonly string[],
  ) {
    const transaction = redis.multi()[command](body, keys.length, ...keys, ...args);
    for (const key of keys) transaction.persist(key);
    const replies = await transaction.exec();
    const [error, reply] = replies?.[0] ?? [new Error('MULTI aborted'), null];
    if (error) throw error;
    return reply;
  }
  return {
    evalSha: (sha, keys, args) => run('evalsha', sha, keys, args),
    eval: (script, keys, args) => run('eval', script, keys, args),
  };
}

export function persistingNodeRedisRunner(redis: ReturnType<typeof createClient>): ScriptRunner {
  async function run(
    command: 'evalSha' | 'eval',
    body: string,
    keys: readonly string[],
    args: readonly string[],
  ) {
    const transaction = redis.multi()[command](body, { keys: [...keys], arguments: [...args] });
    for (const key of keys) transaction.persist(key);
    try {
      return (await transaction.exec())[0];
    } catch (error) {
      // node-redis reports a failed command inside MULTI as one error listing the replies.
      const first = (error as { replies?: unknown[] }).replies?.[0];
      throw first instanceof Error ? first : error;
    }
  }
  return {
    evalSha: (sha, keys, args) => run('evalSha', sha, keys, args),
    eval: (script, keys, args) => run('eval', script, keys, args),
  };
}
