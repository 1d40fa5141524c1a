/**
 * express-rate-limit's stores, driven the way its middleware drives them: `increment(key)`, then
 * allowed when `totalHits <= limit`. On Redis: rate-limit-redis (its increment script by EVALSHA,
 * sent through ioredis `call`, as its README shows). In process: express-rate-limit's MemoryStore.
 */
import { MemoryStore } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import type { Contender, MemoryContender } from './types.js';

export const expressRateLimitRedis: Contender = {
  name: 'express-rate-limit + rate-limit-redis',
  short: 'erl+rlr',
  role: 'peer',
  async create(client, policy) {
    const store = new RedisStore({
      prefix: 'erl:',
      sendCommand: (command: string, ...args: string[]) =>
        client.call(command, ...args) as Promise<number | string>,
    });
    await store.init({ windowMs: policy.windowMs } as Parameters<typeof store.init>[0]);
    return async (key) => (await store.increment(key)).totalHits <= policy.limit;
  },
};

export const expressRateLimitMemory: MemoryContender = {
  name: 'express-rate-limit (MemoryStore)',
  short: 'erl',
  role: 'peer',
  create(policy) {
    const store = new MemoryStore();
    store.init({ windowMs: policy.windowMs } as Parameters<typeof store.init>[0]);
    return {
      check: async (key) => (await store.increment(key)).totalHits <= policy.limit,
      close: () => store.shutdown(),
    };
  },
};
