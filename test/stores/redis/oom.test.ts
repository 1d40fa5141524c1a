/**
 * When Redis refuses writes for want of memory (`maxmemory` reached, `noeviction`), a key over
 * its limit stays denied, by a function and by EVALSHA alike: the refused batch is asked again
 * as peeks, which write nothing, and a check they find denied is denied. A check that would be
 * allowed cannot be counted and is answered by `onStoreError`.
 */

import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createLimiter, redisStore } from '../../../src/index.js';
import { useRedisServer } from '../../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

afterEach(async () => {
  await client.config('SET', 'maxmemory', '0');
});

async function oomErrors(): Promise<number> {
  const stats = await client.info('errorstats');
  return Number(stats.match(/errorstat_OOM:count=(\d+)/)?.[1] ?? 0);
}

describe.each([
  ['a function (FCALL)', true],
  ['EVALSHA', false],
] as const)('through %s', (mode, functions) => {
  it(`regression: a key over its limit was allowed while Redis refused writes (${mode})`, async () => {
    const limiter = createLimiter({
      rules: [
        { name: 'fw', algorithm: 'fixed-window', limit: 3, window: '1h' },
        { name: 'sl', algorithm: 'sliding-log', limit: 5, window: '1h' },
      ],
      store: redisStore({ client, functions }),
      prefix: `oom-${functions}`,
      timeout: SLOW_MACHINE_TIMEOUT,
      denyCache: false,
    });
    for (let i = 0; i < 3; i++) expect((await limiter.check('over')).allowed).toBe(true);
    expect((await limiter.check('over')).allowed).toBe(false);
    expect((await limiter.check('under')).allowed).toBe(true);

    await client.config('SET', 'maxmemory-policy', 'noeviction');
    await client.config('SET', 'maxmemory', '1');
    const before = await oomErrors();
    // One batch: two checks of the key over its limit, one of a key under it, one peek.
    const [first, under, second, peek] = await Promise.all([
      limiter.check('over'),
      limiter.check('under'),
      limiter.check('over'),
      limiter.peek('under'),
    ]);
    expect(await oomErrors()).toBeGreaterThan(before);
    for (const denied of [first, second]) {
      expect([denied?.allowed, denied?.degraded, denied?.rule, denied?.remaining]).toEqual([
        false,
        false,
        'fw',
        0,
      ]);
    }
    // Not counted (Redis is full): answered by onStoreError ('open' by default).
    expect([under?.allowed, under?.degraded]).toEqual([true, 'error']);
    expect([peek?.allowed, peek?.degraded, peek?.remaining]).toEqual([true, false, 1]);

    await client.config('SET', 'maxmemory', '0');
    expect((await limiter.check('under')).remaining).toBe(1);
  });
});
