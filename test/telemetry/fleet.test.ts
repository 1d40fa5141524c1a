/**
 * The fleet view: limiters on one Redis (each with its own client, as separate processes would
 * be) merge their heavy hitters into the store, and any of them reads the sum with
 * `top({ fleet: true })`; the merged sketch keeps Space-Saving's bound and a fixed size, rotates
 * with the period on the store's clock, and its script's SHA is pinned. Keys are bounded in length.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/cli/compare/scenarios.js';
import { createLimiter, type LimiterOptions, memoryStore, redisStore } from '../../src/index.js';
import { SKETCH_SCRIPT } from '../../src/stores/redis/sketch-script.js';
import { sketchKeys } from '../../src/stores/redis/sketches.js';
import type { TopEntry } from '../../src/stores/types.js';
import { sketchOf } from '../../src/telemetry/fleet.js';
import {
  boundedKey,
  MAX_TOP_KEY_LENGTH,
  mergeTop,
  TOP_PERIOD_MS,
} from '../../src/telemetry/heavy-hitters.js';
import { createSpaceSaving } from '../../src/telemetry/space-saving.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';

const PINNED_SKETCH_SHA = '2c71028198814a72ada0704927320ee52c7e92fe';

let server: RedisServer;
let admin: Redis;
useRedisServer((started) => {
  server = started.server;
  admin = started.client;
});

const clients: Redis[] = [];
function client(): Redis {
  const made = new Redis({ port: server.port, enableOfflineQueue: true, maxRetriesPerRequest: 0 });
  clients.push(made);
  return made;
}
afterAll(async () => {
  await Promise.all(clients.map((each) => each.quit()));
});

const RULES = { algorithm: 'fixed-window', limit: 2, window: '1m' } as const;

function expectBounds(entries: readonly TopEntry[], truth: (key: string) => number): void {
  for (const { key, count, error } of entries) {
    const exact = truth(key);
    expect(count - error, key).toBeLessThanOrEqual(exact);
    expect(count, key).toBeGreaterThanOrEqual(exact);
  }
}

describe('top({ fleet: true }) on Redis', () => {
  it("shows every limiter's keys in every other's, summed, soon after their merges", async () => {
    const options: LimiterOptions = {
      rules: RULES,
      prefix: 'fleet1',
      fleetInterval: '50ms',
      timeout: SLOW_MACHINE_TIMEOUT as LimiterOptions['timeout'],
    };
    const a = createLimiter({ ...options, store: redisStore({ client: client() }) });
    const b = createLimiter({ ...options, store: redisStore({ client: client() }) });
    for (let i = 0; i < 7; i++) await a.check('tenant-a');
    for (let i = 0; i < 3; i++) await a.check('shared');
    for (let i = 0; i < 4; i++) await b.check('shared');
    await b.check('tenant-b');
    // Local views are each process's own.
    expect(await b.top({ by: 'checked' })).toEqual([
      { key: 'shared', count: 4, error: 0 },
      { key: 'tenant-b', count: 1, error: 0 },
    ]);
    // Ties in key order.
    const expected = [
      { key: 'shared', count: 7, error: 0 },
      { key: 'tenant-a', count: 7, error: 0 },
      { key: 'tenant-b', count: 1, error: 0 },
    ];
    await expect.poll(() => b.top({ by: 'checked', fleet: true }), { timeout: 5000 }).toEqual(expected);
    expect(await a.top({ by: 'checked', fleet: true })).toEqual(expected);
    // Denials: the limit of 2 is shared through the store, so b's 4 checks of 'shared' were all denied.
    expect(await a.top({ fleet: true })).toEqual([
      { key: 'shared', count: 5, error: 0 },
      { key: 'tenant-a', count: 5, error: 0 },
    ]);
    // An idle limiter writes nothing more; close merges what is pending.
    await a.check('at-close');
    await Promise.all([a.close(), b.close()]);
    const reader = createLimiter({ ...options, store: redisStore({ client: client() }) });
    expect(await reader.top({ by: 'checked', fleet: true, limit: 2 })).toEqual(expected.slice(0, 2));
    expect((await reader.top({ by: 'checked', fleet: true })).map((entry) => entry.key)).toContain(
      'at-close',
    );
    await reader.close();
  });

  it('keeps count − error ≤ true ≤ count and a fixed size over many merges of small sketches', async () => {
    const store = redisStore({ client: client() });
    const sketches = store.sketches;
    if (sketches === undefined) throw new Error('the Redis store keeps fleet sketches');
    const capacity = 30;
    const exact = new Map<string, number>();
    const next = mulberry32(7);
    // 40 merges as from 40 processes, each a sketch of 30 counters over its own stream.
    for (let process = 0; process < 40; process++) {
      const checked = createSpaceSaving(capacity);
      const denied = createSpaceSaving(capacity);
      for (let i = 0; i < 2000; i++) {
        const key = next() < 0.4 ? `hot-${Math.floor(next() * 10)}` : `cold-${Math.floor(next() * 3000)}`;
        exact.set(key, (exact.get(key) ?? 0) + 1);
        checked.offer(key);
      }
      // The merge sends at most 20 entries: the rest raise the floor it sends.
      await sketches.merge('bound', TOP_PERIOD_MS, capacity, sketchOf(checked, 20), sketchOf(denied));
    }
    const [current, previous] = await sketches.read('bound', 'checked', TOP_PERIOD_MS);
    expect(current?.entries).toHaveLength(capacity);
    expect(previous).toEqual({ floor: 0, entries: [] });
    expect(await admin.zcount(sketchKeys('bound', 'checked')[1] as string, '-inf', '+inf')).toBe(capacity);
    expectBounds(current?.entries ?? [], (key) => exact.get(key) ?? 0);
    const listed = new Set(current?.entries.map((entry) => entry.key));
    for (const [key, count] of exact)
      if (!listed.has(key)) expect(count).toBeLessThanOrEqual(current?.floor ?? 0);
    // The hot keys stand out of the noise: all ten are listed, ahead of every cold key.
    const top = mergeTop([current?.entries ?? []], [current?.floor ?? 0], 10);
    expect(top.map((entry) => entry.key).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `hot-${i}`).sort(),
    );
  });

  it('moves the current sketch to the previous one when its period ends, and forgets both after two', async () => {
    let now = 1_000_000;
    const store = redisStore({ client: client(), clock: () => now });
    const sketches = store.sketches;
    if (sketches === undefined) throw new Error('the Redis store keeps fleet sketches');
    const sketch = (entries: TopEntry[]) => ({ entries, floor: 0 });
    const none = sketch([]);
    await sketches.merge('rotate', 1000, 10, sketch([{ key: 'early', count: 5, error: 0 }]), none);
    now += 1000;
    await sketches.merge('rotate', 1000, 10, sketch([{ key: 'late', count: 2, error: 0 }]), none);
    expect(await sketches.read('rotate', 'checked', 1000)).toEqual([
      { floor: 0, entries: [{ key: 'late', count: 2, error: 0 }] },
      { floor: 0, entries: [{ key: 'early', count: 5, error: 0 }] },
    ]);
    // A read rotates in its answer what the next merge would rotate in the store.
    now += 1000;
    expect(await sketches.read('rotate', 'checked', 1000)).toEqual([
      { floor: 0, entries: [] },
      { floor: 0, entries: [{ key: 'late', count: 2, error: 0 }] },
    ]);
    now += 1000;
    expect(await sketches.read('rotate', 'checked', 1000)).toEqual([
      { floor: 0, entries: [] },
      { floor: 0, entries: [] },
    ]);
    await sketches.merge('rotate', 1000, 10, sketch([{ key: 'again', count: 1, error: 0 }]), none);
    expect(await sketches.read('rotate', 'checked', 1000)).toEqual([
      { floor: 0, entries: [{ key: 'again', count: 1, error: 0 }] },
      { floor: 0, entries: [] },
    ]);
    // Every key of the sketches expires: nothing outlives two periods.
    for (const key of await admin.keys('rotate:*')) expect(await admin.pttl(key)).toBeGreaterThan(0);
  });

  it('reports a merge that fails as a storeError, and drops it', async () => {
    const redis = client();
    const refused = new Error('ERR the sketch is refused');
    // Every script but the sketch's goes through.
    const runner = {
      evalSha: (sha: string, keys: readonly string[], args: readonly string[]) =>
        sha === SKETCH_SCRIPT.sha
          ? Promise.reject(refused)
          : redis.evalsha(sha, keys.length, ...keys, ...args),
      eval: (script: string, keys: readonly string[], args: readonly string[]) =>
        script === SKETCH_SCRIPT.text
          ? Promise.reject(refused)
          : redis.eval(script, keys.length, ...keys, ...args),
    };
    const errors: unknown[] = [];
    const limiter = createLimiter({ rules: RULES, prefix: 'refused', store: redisStore({ client: runner }) });
    limiter.on('storeError', (cause) => errors.push(cause));
    expect((await limiter.check('a')).allowed).toBe(true);
    await limiter.close();
    expect(errors).toEqual([refused]);
    expect(await admin.keys('refused:{#top*')).toEqual([]);
  });

  it('has the pinned SHA (update the pin deliberately when the script changes)', () => {
    expect(SKETCH_SCRIPT.sha, 'the sketch script changed: review, then update PINNED_SKETCH_SHA').toBe(
      PINNED_SKETCH_SHA,
    );
  });
});

describe('top({ fleet: true }) elsewhere', () => {
  it('answers the process’s own keys on the memory store (one process is the fleet)', async () => {
    const limiter = createLimiter({ rules: RULES, store: memoryStore() });
    for (let i = 0; i < 3; i++) await limiter.check('only');
    expect(await limiter.top({ fleet: true })).toEqual([{ key: 'only', count: 1, error: 0 }]);
  });

  it('rejects a fleetInterval out of range, naming it', () => {
    expect(() => createLimiter({ rules: RULES, fleetInterval: '1m' })).toThrow(
      new RangeError('fleetInterval: "1m" must be from 10ms to 20s'),
    );
  });
});

describe('keys in the sketch', () => {
  it('keeps a 100 kB key as its first characters, never whole', async () => {
    const hostile = 'x'.repeat(100_000);
    const limiter = createLimiter({ rules: RULES });
    await limiter.check(hostile);
    await limiter.check(`${hostile}y`);
    const [entry] = await limiter.top({ by: 'checked' });
    expect(entry).toEqual({ key: `${'x'.repeat(MAX_TOP_KEY_LENGTH - 1)}…`, count: 2, error: 0 });
    expect(boundedKey('short')).toBe('short');
    // Never half a surrogate pair.
    const emoji = `${'a'.repeat(MAX_TOP_KEY_LENGTH - 2)}😀😀`;
    expect(boundedKey(emoji)).toBe(`${'a'.repeat(MAX_TOP_KEY_LENGTH - 2)}…`);
  });
});
