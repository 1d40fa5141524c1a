/**
 * rate-limiter-flexible: RateLimiterRedis (its fixed-window counter script, called through the
 * ioredis client's defineCommand), the same with `inMemoryBlockOnConsumed` (keys past the limit
 * are answered from process memory until their window ends), and RateLimiterMemory.
 * It rejects with a RateLimiterRes (not an Error) to mean "limited".
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Check, Contender, MemoryContender, Policy } from './types.js';

function seconds(policy: Policy): number {
  if (policy.windowMs % 1000 !== 0) throw new RangeError('rate-limiter-flexible counts windows in seconds');
  return policy.windowMs / 1000;
}

function checkOf(limiter: { consume(key: string): Promise<unknown> }): Check {
  return (key) =>
    limiter.consume(key).then(
      () => true,
      (rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) return false;
        throw rejection;
      },
    );
}

export const rateLimiterFlexibleRedis: Contender = {
  name: 'rate-limiter-flexible (RateLimiterRedis)',
  short: 'rlf',
  role: 'peer',
  create(client, policy) {
    return checkOf(
      new RateLimiterRedis({
        storeClient: client,
        keyPrefix: 'rlf',
        points: policy.limit,
        duration: seconds(policy),
      }),
    );
  },
};

export const rateLimiterFlexibleBlock: Contender = {
  name: 'rate-limiter-flexible + inMemoryBlockOnConsumed',
  short: 'rlf+block',
  role: 'peer',
  create(client, policy) {
    return checkOf(
      new RateLimiterRedis({
        storeClient: client,
        keyPrefix: 'rlfb',
        points: policy.limit,
        duration: seconds(policy),
        // Block in process memory as soon as the limit is used up, until the window's end.
        inMemoryBlockOnConsumed: policy.limit,
      }),
    );
  },
};

export const rateLimiterFlexibleMemory: MemoryContender = {
  name: 'rate-limiter-flexible (RateLimiterMemory)',
  short: 'rlf',
  role: 'peer',
  create(policy) {
    return { check: checkOf(new RateLimiterMemory({ points: policy.limit, duration: seconds(policy) })) };
  },
};
