/**
 * @fastify/rate-limit's stores, driven the way its plugin drives them: `incr(key, cb, window, max)`,
 * then allowed when `current <= max`. On Redis: its RedisStore (a counter script registered with
 * ioredis defineCommand). In process: its LocalStore (an LRU map).
 * The stores are not in the package's typings; this file declares the little it uses.
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Check, Contender, MemoryContender, Policy } from './types.js';

interface FastifyStore {
  incr(
    key: string,
    callback: (error: Error | null, result: { current: number; ttl: number } | null) => void,
    timeWindow: number,
    max: number,
  ): void;
}

const require = createRequire(import.meta.url);
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  prefix?: string,
) => FastifyStore;
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache?: number,
) => FastifyStore;

function checkOf(store: FastifyStore, policy: Policy): Check {
  return (key) =>
    new Promise((resolve, reject) => {
      store.incr(
        key,
        (error, result) =>
          error || result === null ? reject(error) : resolve(result.current <= policy.limit),
        policy.windowMs,
        policy.limit,
      );
    });
}

export const fastifyRateLimitRedis: Contender = {
  name: '@fastify/rate-limit (RedisStore)',
  short: 'fastify-rl',
  role: 'peer',
  create(client, policy) {
    return checkOf(new RedisStore(false, false, client, 'frl:'), policy);
  },
};

export const fastifyRateLimitMemory: MemoryContender = {
  name: '@fastify/rate-limit (LocalStore)',
  short: 'fastify-rl',
  role: 'peer',
  create(policy) {
    // The plugin's default cache size is 5000 keys; sized here to hold the bench's key space.
    return { check: checkOf(new LocalStore(false, false, 100_000), policy) };
  },
};
