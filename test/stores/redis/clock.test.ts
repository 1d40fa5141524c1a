/**
 * Without a `clock` option the Redis store decides on the Redis server's clock (`TIME` inside the
 * script): decisions line up with the server's time, and a caller whose own clock is seconds
 * off gets exactly the decisions of a caller whose clock is right.
 */

import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type AlgorithmName, createLimiter, type Decision, redisStore } from '../../../src/index.js';
import { useRedisServer } from '../../support/redis-server.js';
import { redisTimeMs, withinOneWindow } from '../../support/redis-time.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra'];
const HOUR = 3_600_000;
const MINUTE = 60_000;

let client: Redis;
let keys = 0;
useRedisServer((started) => {
  client = started.client;
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Makes this process's Date.now run `skew()` ms off the real clock. */
function skewDateNow(skew: () => number): void {
  const realNow = Date.now.bind(Date);
  vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skew());
}

function limiterFor(algorithm: AlgorithmName, limit: number, window: number) {
  return createLimiter({
    timeout: SLOW_MACHINE_TIMEOUT,
    store: redisStore({ client }),
    rules: { name: 'r', algorithm, limit, window },
  });
}

describe('decisions on the Redis server clock', () => {
  it.each(ALGORITHMS)('%s: exact counts, resets within the window', async (algorithm) => {
    const limiter = limiterFor(algorithm, 5, HOUR);
    // The sliding window's previous window still weighs in during the next one.
    const longest = algorithm === 'sliding-window' ? 2 * HOUR : HOUR;
    await withinOneWindow(client, HOUR, async () => {
      const key = `sane-${keys++}`;
      for (let i = 0; i < 5; i++) {
        const decision = await limiter.check(key);
        expect(decision).toMatchObject({ allowed: true, remaining: 4 - i, retryAfterMs: 0, windowMs: HOUR });
        expect(decision.resetMs).toBeGreaterThan(0);
        expect(decision.resetMs).toBeLessThanOrEqual(longest);
      }
      const denied = await limiter.check(key);
      expect(denied).toMatchObject({ allowed: false, remaining: 0 });
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      expect(denied.retryAfterMs).toBeLessThanOrEqual(longest);
    });
  });

  it('fixed-window: resetMs is the time to the window end by the server clock', async () => {
    const limiter = limiterFor('fixed-window', 5, 10_000);
    await withinOneWindow(client, 10_000, async () => {
      const before = await redisTimeMs(client);
      const decision = await limiter.check(`end-${keys++}`);
      const after = await redisTimeMs(client);
      const end = before - (before % 10_000) + 10_000;
      expect(decision.resetMs).toBeGreaterThanOrEqual(end - after);
      expect(decision.resetMs).toBeLessThanOrEqual(end - before);
    });
  });

  it('token-bucket: a denial waits for one token to drip in by the server clock', async () => {
    // 10 per minute: one token every 6 s.
    const limiter = limiterFor('token-bucket', 10, MINUTE);
    const key = `drip-${keys++}`;
    const start = await redisTimeMs(client);
    for (let i = 0; i < 10; i++) expect((await limiter.check(key)).allowed).toBe(true);
    const denied = await limiter.check(key);
    const end = await redisTimeMs(client);
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBeGreaterThanOrEqual(6000 - (end - start));
    expect(denied.retryAfterMs).toBeLessThanOrEqual(6000);
  });
});

describe("the caller's clock is ignored", () => {
  it.each(ALGORITHMS)('%s: a process skewed by -5 s / +5 s decides like one on time', async (algorithm) => {
    let skew = 0;
    skewDateNow(() => skew);
    const limiter = limiterFor(algorithm, 10, MINUTE);
    await withinOneWindow(client, MINUTE, async () => {
      const skewedKey = `skewed-${keys++}`;
      const onTimeKey = `on-time-${keys++}`;
      const started = performance.now();
      for (let step = 0; step < 13; step++) {
        skew = [-5000, 5000, 0][step % 3] as number;
        const skewed = await limiter.check(skewedKey);
        skew = 0;
        const onTime = await limiter.check(onTimeKey);
        const elapsed = Math.ceil(performance.now() - started) + 1;
        const where = `${algorithm} step ${step}`;
        expect(pick(skewed), where).toEqual(pick(onTime));
        // The two keys' histories are at most `elapsed` apart on the server's clock; a script
        // that used the caller's clock would put them about 5000 ms apart.
        expect(Math.abs(skewed.resetMs - onTime.resetMs), where).toBeLessThanOrEqual(elapsed);
        expect(Math.abs(skewed.retryAfterMs - onTime.retryAfterMs), where).toBeLessThanOrEqual(elapsed);
        expect(skewed.allowed, where).toBe(step < 10);
      }
    });
  });

  it('token-bucket: 10 s of disagreement between two callers refills nothing', async () => {
    let skew = -5000;
    skewDateNow(() => skew);
    // One token every 6 s: a script on the callers' clocks would see 10 s pass and admit one more.
    const limiter = limiterFor('token-bucket', 10, MINUTE);
    const key = `refill-${keys++}`;
    for (let i = 0; i < 10; i++) expect((await limiter.check(key)).allowed).toBe(true);
    skew = 5000;
    const denied = await limiter.check(key);
    expect(denied).toMatchObject({ allowed: false, remaining: 0 });
    expect(denied.retryAfterMs).toBeGreaterThan(5000);
  });
});

function pick({ allowed, remaining, limit, rule, windowMs }: Decision) {
  return { allowed, remaining, limit, rule, windowMs };
}
