/**
 * The limiter's OpenTelemetry metrics, read back through the real SDK: instrument names, units
 * and attributes, and counts equal to the decisions made, on the memory store and on a
 * throwaway Redis (durations, deny cache answers, a paused server's timeouts, quota slices).
 */
import type { Histogram } from '@opentelemetry/sdk-metrics';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Decision, redisStore } from '../../src/index.js';
import { STORE_DURATION_BOUNDARIES } from '../../src/telemetry/instruments.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';
import { createSdk, pointsOf, valuesBy } from './support.js';

const minute = { name: 'minute', algorithm: 'fixed-window', limit: 3, window: '1m' } as const;

async function checks(limiter: { check(key: string): Promise<Decision> }, key: string, times: number) {
  const decisions: Decision[] = [];
  for (let i = 0; i < times; i++) decisions.push(await limiter.check(key));
  return decisions;
}

describe('OpenTelemetry metrics on the memory store', () => {
  it('counts each check once under its rule and outcome, cumulatively; peeks are not counted', async () => {
    const sdk = createSdk();
    const limiter = createLimiter({ meter: sdk.provider.getMeter('test'), prefix: 'mem', rules: minute });
    await checks(limiter, 'tenant-a', 5);
    await limiter.peek('tenant-a');
    const first = pointsOf(await sdk.collect(), 'floodgate.decisions');
    expect(first.unit).toBe('{decision}');
    expect(valuesBy(first.points, 'floodgate.prefix', 'floodgate.rule', 'floodgate.outcome')).toEqual({
      'mem|minute|allowed': 3,
      'mem|minute|denied': 2,
    });
    await checks(limiter, 'tenant-b', 1);
    const second = pointsOf(await sdk.collect(), 'floodgate.decisions');
    expect(valuesBy(second.points, 'floodgate.rule', 'floodgate.outcome')).toEqual({
      'minute|allowed': 4,
      'minute|denied': 2,
    });
  });

  it('counts shadow rules’ would-be denials, blocks and override blocks under their outcomes, never a key', async () => {
    const sdk = createSdk();
    const meter = sdk.provider.getMeter('test');
    const trial = createLimiter({
      meter,
      prefix: 'trial',
      rules: [
        { name: 'enforced', algorithm: 'fixed-window', limit: 100, window: '1m' },
        { name: 'strict', algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
      ],
    });
    const shadowed = await checks(trial, 'key-shadow', 3);
    expect(shadowed.map((d) => [d.rule, d.allowed, d.shadowDenied])).toEqual([
      ['enforced', true, []],
      ['enforced', true, ['strict']],
      ['enforced', true, ['strict']],
    ]);
    const abuse = createLimiter({
      meter,
      prefix: 'abuse',
      rules: { name: 'login', algorithm: 'fixed-window', limit: 1, window: '1m', block: '15m' },
    });
    await checks(abuse, 'key-block', 3);
    await abuse.setOverride('key-override', { block: true });
    await checks(abuse, 'key-override', 2);
    const { points } = pointsOf(await sdk.collect(), 'floodgate.decisions');
    expect(valuesBy(points, 'floodgate.prefix', 'floodgate.rule', 'floodgate.outcome')).toEqual({
      'trial|enforced|allowed': 1,
      'trial|enforced|shadow_denied': 2,
      'abuse|login|allowed': 1,
      'abuse|login|blocked': 2,
      'abuse|override.block|blocked': 2,
    });
    const everyValue = JSON.stringify(points.map((point) => point.attributes));
    expect(everyValue).not.toMatch(/key-/);
  });

  it('reports the slots held now, 0 once released, and nothing is timed for the in-process store', async () => {
    const sdk = createSdk();
    const limiter = createLimiter({
      meter: sdk.provider.getMeter('test'),
      prefix: 'conc',
      rules: { name: 'inflight', algorithm: 'concurrency', limit: 2 },
    });
    const slotsNow = async () =>
      valuesBy(pointsOf(await sdk.collect(), 'floodgate.concurrency.slots').points, 'floodgate.rule');
    expect(await slotsNow()).toEqual({ inflight: 0 });
    const [first, second, third] = await checks(limiter, 'job', 3);
    expect([first?.allowed, second?.allowed, third?.allowed]).toEqual([true, true, false]);
    expect(await slotsNow()).toEqual({ inflight: 2 });
    await limiter.release(first as Decision);
    expect(await slotsNow()).toEqual({ inflight: 1 });
    await limiter.release(second as Decision);
    expect(await slotsNow()).toEqual({ inflight: 0 });
    await limiter.check('job');
    await limiter.close();
    expect(await slotsNow()).toEqual({ inflight: 0 });
    expect(pointsOf(await sdk.collect(), 'floodgate.store.duration').points).toEqual([]);
  });

  it('rejects a meter that is not one, and a bad topKeys, naming the option', () => {
    expect(() => createLimiter({ rules: minute, meter: {} as never })).toThrow(
      new TypeError(
        "meter: expected an OpenTelemetry Meter (metrics.getMeter('my-service') from @opentelemetry/api) with createCounter, createHistogram and createObservableGauge, got an object",
      ),
    );
    for (const bad of [-1, 1.5, 100_001, '10']) {
      expect(() => createLimiter({ rules: minute, topKeys: bad as number })).toThrow(
        new RangeError(
          `topKeys: ${typeof bad === 'string' ? `"${bad}"` : bad} must be an integer from 0 (off) to 100000`,
        ),
      );
    }
  });
});

describe('OpenTelemetry metrics on Redis', () => {
  let server: RedisServer;
  let client: Redis;
  useRedisServer((started) => {
    server = started.server;
    client = started.client;
  });

  it('times each store call by operation in seconds, and counts deny cache answers', async () => {
    const sdk = createSdk();
    const limiter = createLimiter({
      meter: sdk.provider.getMeter('test'),
      prefix: 'redis',
      store: redisStore({ client }),
      timeout: SLOW_MACHINE_TIMEOUT,
      rules: minute,
    });
    // 3 allowed, 1 denied by the store, 1 denied by the deny cache (no store call).
    await checks(limiter, 'tenant-a', 5);
    // A peek of a denied key is answered by the deny cache too: peek another.
    await limiter.peek('tenant-b');
    await limiter.reset('tenant-a');
    const collected = await sdk.collect();
    expect(
      valuesBy(pointsOf(collected, 'floodgate.decisions').points, 'floodgate.rule', 'floodgate.outcome'),
    ).toEqual({ 'minute|allowed': 3, 'minute|denied': 2 });
    expect(valuesBy(pointsOf(collected, 'floodgate.deny_cache.hits').points, 'floodgate.prefix')).toEqual({
      redis: 1,
    });
    const durations = pointsOf<Histogram>(collected, 'floodgate.store.duration');
    expect(durations.unit).toBe('s');
    const byOperation = Object.fromEntries(
      durations.points.map((point) => [point.attributes['floodgate.operation'], point.value]),
    );
    expect(Object.keys(byOperation).sort()).toEqual(['check', 'peek', 'reset']);
    expect([byOperation.check?.count, byOperation.peek?.count, byOperation.reset?.count]).toEqual([4, 1, 1]);
    expect(byOperation.check?.buckets.boundaries).toEqual(STORE_DURATION_BOUNDARIES);
    expect(byOperation.check?.min).toBeGreaterThan(0);
  });

  it('counts a paused server’s timeout as a store error and its check as degraded', async () => {
    const sdk = createSdk();
    const own = new Redis(server.port, '127.0.0.1');
    const limiter = createLimiter({
      meter: sdk.provider.getMeter('test'),
      prefix: 'paused',
      store: redisStore({ client: own }),
      timeout: '300ms',
      breaker: false,
      rules: minute,
    });
    // The first check loads the script: on a loaded machine it may take longer than the deadline.
    const decisions: Decision[] = [];
    do decisions.push(await limiter.check('warm'));
    while ((decisions.at(-1) as Decision).degraded !== false && decisions.length < 10);
    await client.call('CLIENT', 'PAUSE', '2000', 'ALL');
    decisions.push(await limiter.check('tenant-p'));
    await client.call('CLIENT', 'UNPAUSE');
    const paused = decisions.at(-1) as Decision;
    expect([paused.allowed, paused.degraded]).toEqual([true, 'timeout']);
    const timeouts = decisions.filter((decision) => decision.degraded === 'timeout').length;
    expect(decisions.filter((decision) => decision.degraded === false)).toHaveLength(1);
    const collected = await sdk.collect();
    expect(
      valuesBy(pointsOf(collected, 'floodgate.decisions').points, 'floodgate.rule', 'floodgate.outcome'),
    ).toEqual({ 'minute|allowed': 1, 'minute|degraded': decisions.length - 1 });
    expect(
      valuesBy(pointsOf(collected, 'floodgate.store.errors').points, 'floodgate.prefix', 'error.type'),
    ).toEqual({ 'paused|StoreTimeoutError': timeouts });
    await limiter.close();
    own.disconnect();
  });

  it('counts quota slices taken and given back', async () => {
    const sdk = createSdk();
    const own = new Redis(server.port, '127.0.0.1');
    const limiter = createLimiter({
      meter: sdk.provider.getMeter('test'),
      prefix: 'leased',
      store: redisStore({ client: own }),
      timeout: SLOW_MACHINE_TIMEOUT,
      rules: {
        name: 'hot',
        algorithm: 'fixed-window',
        limit: 100_000,
        window: '1h',
        quotaLease: { max: 50 },
      },
    });
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next++ < 2000) await limiter.check('hot-key');
      }),
    );
    await limiter.close();
    const collected = await sdk.collect();
    const slices = valuesBy(pointsOf(collected, 'floodgate.lease.slices').points, 'floodgate.action');
    expect(slices.taken).toBeGreaterThan(0);
    // close() gives back the last slice's unused units at least.
    expect(slices.returned).toBeGreaterThan(0);
    expect(slices.returned).toBeLessThanOrEqual(slices.taken as number);
    const leases = pointsOf<Histogram>(collected, 'floodgate.store.duration').points.find(
      (point) => point.attributes['floodgate.operation'] === 'lease',
    );
    expect(leases?.value.count).toBeGreaterThanOrEqual(slices.taken as number);
    expect(
      valuesBy(pointsOf(collected, 'floodgate.decisions').points, 'floodgate.rule', 'floodgate.outcome'),
    ).toEqual({ 'hot|allowed': 2000 });
    own.disconnect();
  });
});
