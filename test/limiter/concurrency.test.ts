/**
 * Concurrency rules through the limiter, on the memory store and on a real Redis: a release is
 * idempotent in the store itself (not only per decision object), slot ids never collide, the
 * decision exposes slots in use, close() gives back what the limiter still holds, denials are not
 * cached locally (slots come back by release long before their retry time), and bad options fail
 * at construction naming the option.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Decision,
  type Duration,
  memoryStore,
  type RuleOptions,
  redisStore,
  type Store,
} from '../../src/index.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});

const inflight: RuleOptions = { name: 'inflight', algorithm: 'concurrency', limit: 2, lease: '1m' };

const STORES: [string, () => Store][] = [
  ['memory', () => memoryStore()],
  ['redis', () => redisStore({ client: new Redis(server.port, '127.0.0.1') })],
];

describe.each(STORES)('concurrency on the %s store', (_name, makeStore) => {
  it('release twice frees once, also when the second comes from another limiter instance', async () => {
    const store = makeStore();
    const options = {
      store,
      rules: inflight,
      prefix: `twice-${_name}`,
      timeout: SLOW_MACHINE_TIMEOUT as Duration,
    };
    const first = createLimiter(options);
    const calls: number[] = [];
    const counting: Store = {
      ...store,
      kind: store.kind,
      evaluate: store.evaluate.bind(store),
      async slots(...args) {
        const freed = await (store.slots as NonNullable<Store['slots']>)(...args);
        calls.push(freed);
        return freed;
      },
    };
    const second = createLimiter({ ...options, store: counting });
    const held = await second.check('k');
    const other = await first.check('k');
    expect([held.allowed, other.allowed, held.inFlight, other.inFlight]).toEqual([true, true, 1, 2]);
    await second.release(held);
    await second.release(held);
    // Only the first release reached the store, and it freed exactly one slot.
    expect(calls).toEqual([1]);
    expect((await first.peek('k')).inFlight).toBe(1);
    await first.release(other);
    expect((await first.peek('k')).inFlight).toBe(0);
  });

  it('slot ids are unique: releasing one request never frees another taken in the same millisecond', async () => {
    const store = makeStore();
    const limiter = createLimiter({
      store,
      rules: inflight,
      prefix: `unique-${_name}`,
      timeout: SLOW_MACHINE_TIMEOUT as Duration,
    });
    const old = await limiter.check('k');
    // Many take-and-release rounds on the other slot, most within one millisecond: every id is new.
    let last: Decision | undefined;
    for (let round = 0; round < 50; round++) {
      if (last !== undefined) await limiter.release(last);
      last = await limiter.check('k');
      expect(last.allowed).toBe(true);
    }
    await limiter.release(old);
    expect((await limiter.peek('k')).inFlight).toBe(1);
    await limiter.release(last as Decision);
    expect((await limiter.peek('k')).inFlight).toBe(0);
  });

  it('close() releases every slot its checks still hold', async () => {
    const store = makeStore();
    const options = {
      store,
      rules: inflight,
      prefix: `close-${_name}`,
      timeout: SLOW_MACHINE_TIMEOUT as Duration,
    };
    const closing = createLimiter(options);
    const observer = createLimiter(options);
    const a = await closing.check('a');
    await closing.check('a');
    await closing.check('b');
    await closing.release(a);
    expect([(await observer.peek('a')).inFlight, (await observer.peek('b')).inFlight]).toEqual([1, 1]);
    await closing.close();
    expect([(await observer.peek('a')).inFlight, (await observer.peek('b')).inFlight]).toEqual([0, 0]);
  });

  it('renew reports whether the slots were still held', async () => {
    const store = makeStore();
    const limiter = createLimiter({
      store,
      rules: inflight,
      prefix: `renew-${_name}`,
      timeout: SLOW_MACHINE_TIMEOUT as Duration,
    });
    const d = await limiter.check('k');
    expect(await limiter.renew(d)).toBe(true);
    await limiter.release(d);
    expect(await limiter.renew(d)).toBe(false);
    const denied = await limiter.check('k', { cost: 3 });
    expect(await limiter.renew(denied)).toBe(false);
  });
});

describe('concurrency on Redis', () => {
  it('a denial is not cached locally: a release elsewhere admits the next check at once', async () => {
    const store = () => redisStore({ client: new Redis(server.port, '127.0.0.1') });
    const options = {
      rules: { ...inflight, limit: 1 },
      prefix: 'nocache',
      timeout: SLOW_MACHINE_TIMEOUT as Duration,
    };
    const here = createLimiter({ ...options, store: store() });
    const there = createLimiter({ ...options, store: store() });
    const held = await there.check('k');
    const denied = await here.check('k');
    expect([denied.allowed, denied.rule, denied.inFlight]).toEqual([false, 'inflight', 1]);
    expect(denied.retryAfterMs).toBeGreaterThan(59_000);
    await there.release(held);
    expect((await here.check('k')).allowed).toBe(true);
  });

  it('keys expire with the last lease, and hold one member per slot', async () => {
    const client = new Redis(server.port, '127.0.0.1');
    const limiter = createLimiter({
      store: redisStore({ client }),
      rules: { ...inflight, limit: 5, lease: '10s' },
      prefix: 'layout',
      timeout: SLOW_MACHINE_TIMEOUT as Duration,
    });
    await limiter.check('k', { cost: 3 });
    const [set] = await client.keys('layout:*:inflight:cc');
    expect(await client.zcard(set as string)).toBe(3);
    const ttl = await client.pttl(set as string);
    expect(ttl).toBeGreaterThan(9_000);
    expect(ttl).toBeLessThanOrEqual(10_000);
    expect(await client.pttl(`${set}:n`)).toBeLessThanOrEqual(10_000);
    client.disconnect();
  });
});

describe('concurrency options', () => {
  it('refuses a window on a concurrency rule, a lease elsewhere, and stores without slots', () => {
    expect(() => createLimiter({ rules: { algorithm: 'concurrency', limit: 5, window: '1m' } })).toThrow(
      `rules.window: "1m" is not allowed: a 'concurrency' rule has no window; its slots are held for at most \`lease\``,
    );
    expect(() =>
      createLimiter({ rules: { algorithm: 'fixed-window', limit: 5, window: '1m', lease: '1m' } }),
    ).toThrow(`rules.lease: "1m" is not allowed: only 'concurrency' rules hold slots on a lease`);
    expect(() => createLimiter({ rules: { algorithm: 'concurrency', limit: 5, lease: 0 } })).toThrow(
      'rules.lease: 0 must be a whole number of milliseconds >= 1',
    );
    expect(() => createLimiter({ rules: { algorithm: 'concurrency', limit: 10_001 } })).toThrow(
      'rules.limit: 10001 must be an integer from 1 to 10000',
    );
    const { slots: _slots, ...withoutSlots } = memoryStore();
    expect(() =>
      createLimiter({
        rules: { algorithm: 'concurrency', limit: 5 },
        store: { ...withoutSlots, kind: 'custom' },
      }),
    ).toThrow("store: a 'custom' store cannot hold 'concurrency' slots (it has no slots())");
  });

  it('defaults: a one-minute lease, and the name concurrency-<limit>', () => {
    const limiter = createLimiter({ rules: { algorithm: 'concurrency', limit: 5 } });
    expect(limiter.rules).toEqual([
      {
        name: 'concurrency-5',
        algorithm: 'concurrency',
        limit: 5,
        windowMs: 60_000,
        capacity: 5,
        counts: 'cost',
      },
    ]);
  });
});
