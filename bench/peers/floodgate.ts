/**
 * Floodgate itself, one contender per algorithm, on Redis (redisStore, the server's clock) and in
 * process (memoryStore). To benchmark a new store option (e.g. batching), add a contender here.
 */
import type { AlgorithmName } from '../../src/index.js';
import { floodgate } from '../support/floodgate.js';

const { createLimiter, memoryStore, redisStore } = floodgate;

import type { Contender, MemoryContender, Policy } from './types.js';

export const FLOODGATE_ALGORITHMS: readonly AlgorithmName[] = [
  'fixed-window',
  'sliding-window',
  'token-bucket',
  'gcra',
  'sliding-log',
];

function rule(algorithm: AlgorithmName, policy: Policy) {
  return { name: 'bench', algorithm, limit: policy.limit, window: policy.windowMs };
}

/** Floodgate on Redis with `algorithm`. */
export function floodgateRedis(algorithm: AlgorithmName): Contender {
  return {
    name: `floodgate ${algorithm}`,
    short: `fg ${algorithm}`,
    role: 'floodgate',
    create(client, policy) {
      const limiter = createLimiter({
        prefix: 'fg',
        rules: rule(algorithm, policy),
        store: redisStore({ client }),
      });
      return async (key) => (await limiter.check(key)).allowed;
    },
  };
}

/** Floodgate in process with `algorithm`. */
export function floodgateMemory(algorithm: AlgorithmName): MemoryContender {
  return {
    name: `floodgate ${algorithm}`,
    short: `fg ${algorithm}`,
    role: 'floodgate',
    create(policy) {
      const limiter = createLimiter({ rules: rule(algorithm, policy), store: memoryStore() });
      return { check: async (key) => (await limiter.check(key)).allowed };
    },
  };
}
