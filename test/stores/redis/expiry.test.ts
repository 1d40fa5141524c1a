/**
 * Redis state costs nothing once it no longer matters: every key the script writes has a TTL,
 * never longer than the time until the rule's quota is fully restored (after which the state
 * is equivalent to none) and never shorter; keys are O(1) per rule (sliding-log: two keys,
 * with at most `limit` entries); and each key is small.
 */

import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { type AlgorithmName, createLimiter, type RuleOptions, redisStore } from '../../../src/index.js';
import { useRedisServer } from '../../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra'];
const KEYS_PER_RULE: Record<AlgorithmName, number> = {
  'fixed-window': 1,
  'sliding-log': 2,
  'sliding-window': 1,
  'token-bucket': 1,
  gcra: 1,
  concurrency: 2,
};

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

beforeEach(async () => {
  await client.flushdb();
});

async function allKeys(): Promise<string[]> {
  return (await client.keys('*')).sort();
}

/** Every key with its full content. */
async function snapshot(): Promise<Record<string, unknown>> {
  const content: Record<string, unknown> = {};
  for (const key of await allKeys()) {
    content[key] =
      (await client.type(key)) === 'zset'
        ? await client.zrange(key, 0, -1, 'WITHSCORES')
        : await client.get(key);
  }
  return content;
}

function limiterFor(rules: RuleOptions | RuleOptions[], clock?: () => number) {
  return createLimiter({
    timeout: SLOW_MACHINE_TIMEOUT,
    store: redisStore({ client, ...(clock ? { clock } : {}) }),
    prefix: 'exp',
    rules,
  });
}

describe('TTLs', () => {
  it.each(ALGORITHMS)('%s: every key expires exactly when the quota is fully restored', async (algorithm) => {
    const limiter = limiterFor({ name: 'r', algorithm, limit: 5, window: '1m' });
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const decision = await limiter.check('user');
      const keys = await allKeys();
      expect(keys).toHaveLength(KEYS_PER_RULE[algorithm]);
      for (const key of keys) {
        const ttl = await client.pttl(key);
        const elapsed = Date.now() - started + 1;
        // Not a millisecond longer than the state matters, and not shorter either.
        expect(ttl, key).toBeLessThanOrEqual(decision.resetMs);
        expect(ttl, key).toBeGreaterThanOrEqual(decision.resetMs - elapsed);
      }
    }
  });

  it.each(ALGORITHMS)('%s: the keys are gone once their state no longer matters', async (algorithm) => {
    // Long enough that a loaded machine still lists the keys before they expire (40 ms once
    // flaked in a full parallel run), short enough to wait out.
    const limiter = limiterFor({ name: 'r', algorithm, limit: 2, window: 250 });
    const decision = await limiter.check('user');
    expect(await allKeys()).toHaveLength(KEYS_PER_RULE[algorithm]);
    expect(decision.resetMs).toBeLessThanOrEqual(500);
    await sleep(decision.resetMs + 5);
    expect(await allKeys()).toEqual([]);
  });

  it('denials and peeks write nothing', async () => {
    const limiter = limiterFor(
      ALGORITHMS.map((algorithm) => ({ name: algorithm, algorithm, limit: 3, window: '1m' })),
    );
    expect((await limiter.peek('user')).allowed).toBe(true);
    expect((await limiter.check('user', { cost: 4 })).allowed).toBe(false);
    expect(await allKeys()).toEqual([]);
    await limiter.check('user', { cost: 3 });
    const before = await snapshot();
    expect((await limiter.check('user')).allowed).toBe(false);
    expect(await limiter.peek('user')).toMatchObject({ allowed: false });
    expect(await snapshot()).toEqual(before);
  });

  it('reset deletes every key of the user key, and only those', async () => {
    const limiter = limiterFor(
      ALGORITHMS.map((algorithm) => ({ name: algorithm, algorithm, limit: 3, window: '1m' })),
    );
    await limiter.check('a');
    await limiter.check('b');
    expect(await allKeys()).toHaveLength(12);
    await limiter.reset('a');
    const left = await allKeys();
    expect(left).toHaveLength(6);
    for (const key of left) expect(key.startsWith('exp:{b}:')).toBe(true);
  });
});

describe('size', () => {
  it('O(1) keys per rule: one per rule, two for sliding-log, however many checks', async () => {
    let now = 1_700_006_400_000;
    const limiter = limiterFor(
      ALGORITHMS.map((algorithm) => ({ name: algorithm, algorithm, limit: 20, window: 1000 })),
      () => now,
    );
    for (let i = 0; i < 300; i++) {
      now += 37;
      await limiter.check('user');
    }
    expect(await client.dbsize()).toBe(6);
  });

  it('sliding-log keeps at most limit entries, trimming as it goes', async () => {
    let now = 1_700_006_400_000;
    const limiter = limiterFor({ name: 'r', algorithm: 'sliding-log', limit: 10, window: 1000 }, () => now);
    let largest = 0;
    for (let i = 0; i < 400; i++) {
      now += 23;
      await limiter.check('user', { cost: 1 + (i % 3) });
      largest = Math.max(largest, await client.zcard('exp:{user}:r:sl'));
    }
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThanOrEqual(10);
  });

  it.each(ALGORITHMS.filter((algorithm) => algorithm !== 'sliding-log'))(
    '%s: one short string of a few dozen bytes',
    async (algorithm) => {
      const limiter = limiterFor({ name: 'r', algorithm, limit: 1_000_000, window: '1d' });
      for (let i = 0; i < 10; i++) await limiter.check('user', { cost: 7 });
      const [key] = await allKeys();
      expect(await client.type(key as string)).toBe('string');
      expect(await client.strlen(key as string)).toBeLessThanOrEqual(48);
      expect(Number(await client.memory('USAGE', key as string))).toBeLessThanOrEqual(160);
    },
  );

  it('sliding-log: a compact sorted set of small members at limit 100', async () => {
    const limiter = limiterFor({ name: 'r', algorithm: 'sliding-log', limit: 100, window: '1h' });
    for (let i = 0; i < 100; i++) await limiter.check('user');
    const log = 'exp:{user}:r:sl';
    expect(await client.zcard(log)).toBe(100);
    expect(await client.object('ENCODING', log)).toBe('listpack');
    for (const member of await client.zrange(log, 0, -1)) expect(member).toMatch(/^\d{1,3}$/);
    expect(Number(await client.memory('USAGE', log))).toBeLessThanOrEqual(100 * 32 + 256);
    expect(await client.strlen('exp:{user}:r:sl:n')).toBeLessThanOrEqual(16);
  });
});
