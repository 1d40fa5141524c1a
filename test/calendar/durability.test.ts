/**
 * The durability warning: a limiter with a calendar rule on a Redis that persists nothing, or
 * that may evict any key, warns once, naming the cause; a persisting, non-evicting Redis and a
 * limiter without calendar rules are quiet about it until an override brings one, in this
 * process or in another.
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

describe('the durability warning for calendar rules given by an override', () => {
  /** A limiter without calendar rules, on a store of its own (each store reads the config once). */
  function minuteLimiter() {
    const limiter = createLimiter({
      store: redisStore({ client: io }),
      plans: { only: MINUTE },
      defaultPlan: 'only',
    });
    const warnings: StoreWarning[] = [];
    limiter.on('warning', (warning) => warnings.push(warning));
    return { limiter, warnings };
  }
  const settled = () => new Promise((resolve) => setTimeout(resolve, 50));

  it('warns the process that sets it, and the one that reads it at its next check, once each', async () => {
    await io.config('SET', 'save', '');
    await io.config('SET', 'appendonly', 'no');
    await io.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const setter = minuteLimiter();
    const reader = minuteLimiter();
    try {
      await settled();
      expect(setter.warnings.map((warning) => warning.code)).toEqual(['maxmemory-policy']);
      await setter.limiter.setOverride('org_1', MONTHLY);
      await setter.limiter.setOverride('org_2', [MINUTE, MONTHLY]);
      await settled();
      expect(setter.warnings.map((warning) => warning.code)).toEqual([
        'maxmemory-policy',
        'quota-durability',
      ]);
      expect(setter.warnings[1]?.message).toContain('Redis persists nothing');

      expect(reader.warnings.map((warning) => warning.code)).toEqual(['maxmemory-policy']);
      await reader.limiter.check('org_1');
      await reader.limiter.check('org_2');
      await settled();
      expect(reader.warnings.map((warning) => warning.code)).toEqual([
        'maxmemory-policy',
        'quota-durability',
      ]);
    } finally {
      await io.config('SET', 'maxmemory-policy', 'noeviction');
      await setter.limiter.close();
      await reader.limiter.close();
      await io.flushall();
    }
  });

  it('stays quiet for overrides without a period and for blocks', async () => {
    await io.config('SET', 'save', '');
    await io.config('SET', 'appendonly', 'no');
    const { limiter, warnings } = minuteLimiter();
    try {
      await limiter.setOverride('org_1', { ...MINUTE, limit: 50 });
      await limiter.setOverride('org_2', { block: true });
      await limiter.check('org_1');
      await limiter.check('org_2');
      await settled();
      expect(warnings).toEqual([]);
    } finally {
      await limiter.close();
      await io.flushall();
    }
  });
});
