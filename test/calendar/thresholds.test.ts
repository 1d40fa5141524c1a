/**
 * Threshold events on both stores with an injected clock: once per key, rule, threshold and
 * period; one event per threshold when a check jumps past several; never for peeks or denials,
 * never again after a refund takes usage back below a threshold; again in the next period.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, memoryStore, redisStore, type Store, type ThresholdEvent } from '../../src/index.js';
import { useRedisServer } from '../support/redis-server.js';

let io: Redis;
useRedisServer((started) => {
  io = started.client;
});

const START = Date.parse('2026-03-07T23:00:00-05:00');
const END = Date.parse('2026-03-08T00:00:00-05:00');
const NEXT_END = Date.parse('2026-03-09T00:00:00-04:00');
const stores: [string, (clock: () => number) => Store][] = [
  ['memory', (clock) => memoryStore({ clock })],
  ['Redis', (clock) => redisStore({ client: io, clock })],
];
let prefixes = 0;

describe.each(stores)('threshold events on %s', (_, storeOf) => {
  it('fire once per threshold and period, at the crossing, with the usage right after it', async () => {
    let now = START;
    const limiter = createLimiter({
      store: storeOf(() => now),
      prefix: `th${prefixes++}`,
      denyCache: false,
      timeout: '5s',
      plans: {
        pro: [
          {
            name: 'daily',
            algorithm: 'fixed-window',
            limit: 10,
            period: 'day',
            timeZone: 'America/New_York',
            thresholds: [1, 0.5, 0.8],
          },
          { name: 'burst', algorithm: 'fixed-window', limit: 1000, window: '1s' },
        ],
      },
      defaultPlan: 'pro',
    });
    const heard: ThresholdEvent[] = [];
    limiter.on('threshold', (event) => heard.push(event));
    const at = (threshold: number, used: number, periodEnd = END): ThresholdEvent => ({
      key: 'k',
      rule: 'pro.daily',
      threshold,
      used,
      limit: 10,
      periodEnd,
    });

    for (let i = 0; i < 4; i++) await limiter.check('k');
    await limiter.peek('k', { cost: 6 });
    expect(heard).toEqual([]);
    await limiter.check('k');
    expect(heard).toEqual([at(0.5, 5)]);
    // One check past 0.8 and 1 at once: one event each.
    const big = await limiter.check('k', { cost: 5 });
    expect(heard).toEqual([at(0.5, 5), at(0.8, 10), at(1, 10)]);
    // A denial, and a refund that takes usage back under every threshold: no event again.
    expect((await limiter.check('k')).allowed).toBe(false);
    await limiter.refund(big);
    await limiter.check('k', { cost: 5 });
    expect(heard).toHaveLength(3);
    // The next day (23 hours long: the spring change) announces again.
    now = END;
    await limiter.check('k', { cost: 5 });
    expect(heard.slice(3)).toEqual([at(0.5, 5, NEXT_END)]);
  });
});
