/**
 * The durability warning: a limiter with a calendar rule on a Redis that persists nothing, or
 * that may evict any key, warns once, naming the cause; a persisting, non-evicting Redis and a
 * limiter without calendar rules are quiet about it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type RuleOptions, redisStore, type StoreWarning } from '../../src/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

let io: Redis;
let server: RedisServer;
// AOF files go to a directory of the test's own, not the working directory.
const dir = mkdtempSync(join(tmpdir(), 'floodgate-durability-'));
beforeAll(async () => {
  server = await startRedisServer({ args: ['--dir', dir] });
  io = new Redis(server.port, '127.0.0.1');
});
afterAll(async () => {
  io.disconnect();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

const MONTHLY: RuleOptions = { algorithm: 'fixed-window', limit: 1000, period: 'month' };
const MINUTE: RuleOptions = { algorithm: 'fixed-window', limit: 10, window: '1m' };

/** The codes and messages of the warnings a new limiter with `rules` emits. */
async function warningsOf(rules: RuleOptions): Promise<StoreWarning[]> {
  const store = redisStore({ client: io });
  const limiter = createLimiter({ store, plans: { only: rules }, defaultPlan: 'only' });
  const warnings: StoreWarning[] = [];
  limiter.on('warning', (warning) => warnings.push(warning));
  // The limiter's listener on the same (memoized) reading ran before this await resumes.
  await store.inspect?.({ calendar: true });
  await limiter.close();
  return warnings;
}

describe('the durability warning for calendar quotas', () => {
  it('names a Redis that persists nothing', async () => {
    await io.config('SET', 'appendonly', 'no');
    await io.config('SET', 'save', '');
    const warnings = await warningsOf(MONTHLY);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.code).toBe('quota-durability');
    expect(warnings[0]?.message).toContain(
      'at risk: Redis persists nothing (appendonly no and no save rule)',
    );
    expect(warnings[0]?.message).not.toContain('maxmemory-policy');
  });

  it('names an allkeys-* policy, beside the policy warning every limiter gets', async () => {
    await io.config('SET', 'save', '3600 1');
    await io.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const warnings = await warningsOf(MONTHLY);
      expect(warnings.map((warning) => warning.code)).toEqual(['maxmemory-policy', 'quota-durability']);
      expect(warnings[1]?.message).toContain(
        'at risk: Redis maxmemory-policy is allkeys-lru, so a full Redis may evict them before their period ends',
      );
    } finally {
      await io.config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('is quiet on a Redis with AOF and noeviction, and for limiters without calendar rules', async () => {
    await io.config('SET', 'save', '');
    await io.config('SET', 'appendonly', 'yes');
    expect(await warningsOf(MONTHLY)).toEqual([]);
    await io.config('SET', 'appendonly', 'no');
    expect(await warningsOf(MINUTE)).toEqual([]);
  });
});
