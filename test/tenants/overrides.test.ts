/**
 * Runtime overrides, the same cases on the memory store (two limiters sharing one store) and on
 * a real Redis (two limiters with their own clients, one ioredis and one node-redis: two
 * "processes"). Both run on a fake clock; Redis gets it through the store's clock option.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, memoryStore, redisStore, type Store } from '../../src/index.js';
import {
  type NodeRedisClient,
  scriptCalls,
  startRedisServer,
  useRedisServerWithNodeRedis,
} from '../support/redis-server.js';

let io: Redis;
let node: NodeRedisClient;
useRedisServerWithNodeRedis((started) => {
  io = started.client;
  node = started.nodeRedis;
});

const BASE = 1_700_006_400_000;
const MINUTE = 60_000;
const PLANS = {
  free: { name: 'minute', algorithm: 'fixed-window', limit: 2, window: '1m' },
  pro: { name: 'minute', algorithm: 'fixed-window', limit: 100, window: '1m' },
} as const;

let prefixes = 0;

/** Two limiters ("processes") on one shared store, and the fake clock they share. */
function twoProcesses(stores: (clock: () => number) => [Store, Store]) {
  const clock = { now: BASE };
  const [first, second] = stores(() => clock.now);
  const prefix = `ov${prefixes++}`;
  const make = (store: Store): Limiter =>
    createLimiter({ store, plans: PLANS, defaultPlan: 'free', prefix, denyCache: false, timeout: '5s' });
  return { clock, a: make(first), b: make(second), stores: [first, second] as const, prefix };
}

const setups = [
  {
    name: 'memory store',
    stores: (clock: () => number): [Store, Store] => {
      const store = memoryStore({ clock });
      return [store, store];
    },
  },
  {
    name: 'Redis, two clients',
    stores: (clock: () => number): [Store, Store] => [
      redisStore({ client: io, clock }),
      redisStore({ client: node, clock }),
    ],
  },
];

describe.each(setups)('overrides on the $name', ({ stores }) => {
  it('rules set by one process apply in another from its next check, and keep the usage', async () => {
    const { a, b } = twoProcesses(stores);
    expect((await a.check('t', { cost: 2 })).allowed).toBe(true);
    expect(await a.check('t')).toMatchObject({ allowed: false, rule: 'free.minute', plan: 'free' });
    await b.setOverride('t', [{ name: 'minute', algorithm: 'fixed-window', limit: 5, window: '1m' }]);
    const decision = await a.check('t');
    expect(decision).toMatchObject({ allowed: true, rule: 'override.minute', limit: 5, remaining: 2 });
    expect(decision.plan).toBeUndefined();
    // Only the key it names.
    expect(await a.check('other', { cost: 3 })).toMatchObject({ allowed: false, rule: 'free.minute' });
  });

  it('a plan override makes a tenant use another plan, whatever plan the check asks for', async () => {
    const { a, b } = twoProcesses(stores);
    await a.check('t', { cost: 2 });
    await b.setOverride('t', 'pro');
    expect(await a.check('t', { plan: 'free' })).toMatchObject({
      allowed: true,
      rule: 'pro.minute',
      plan: 'pro',
      remaining: 97,
    });
  });

  it('a block with a ttl denies until it expires, with the exact remaining time', async () => {
    const { a, b, clock } = twoProcesses(stores);
    await a.check('t');
    await b.setOverride('t', { block: true }, { ttl: '10m' });
    clock.now += 1000;
    const denied = await a.check('t');
    expect(denied).toMatchObject({
      allowed: false,
      rule: 'override.block',
      limit: 0,
      remaining: 0,
      retryAfterMs: 599_000,
      resetMs: 599_000,
    });
    expect(denied.rules).toHaveLength(1);
    clock.now += 599_000 - 1;
    expect(await a.check('t')).toMatchObject({ allowed: false, retryAfterMs: 1 });
    clock.now += 1;
    expect(await a.check('t')).toMatchObject({ allowed: true, rule: 'free.minute', remaining: 1 });
  });

  it('a block without a ttl denies for good (retry Infinity) until cleared by any process', async () => {
    const { a, b } = twoProcesses(stores);
    await a.setOverride('t', { block: true });
    expect(await b.check('t')).toMatchObject({ allowed: false, retryAfterMs: Number.POSITIVE_INFINITY });
    expect(await b.peek('t')).toMatchObject({ allowed: false, rule: 'override.block' });
    await a.clearOverride('t');
    expect(await b.check('t')).toMatchObject({ allowed: true, rule: 'free.minute', remaining: 1 });
  });

  it('a rules override expires after its ttl and the plan applies again', async () => {
    const { a, b, clock } = twoProcesses(stores);
    await b.setOverride(
      't',
      { name: 'minute', algorithm: 'fixed-window', limit: 50, window: '1h' },
      { ttl: 90_000 },
    );
    expect(await a.check('t')).toMatchObject({ rule: 'override.minute', remaining: 49 });
    clock.now += 89_999;
    expect(await a.check('t')).toMatchObject({ rule: 'override.minute', remaining: 48 });
    clock.now += 1;
    expect(await a.check('t')).toMatchObject({ rule: 'free.minute', allowed: true });
  });

  it('override rules may count requests: a check of cost 50 takes 1 there and 50 from a cost rule', async () => {
    const { a, b } = twoProcesses(stores);
    await a.setOverride('llm', [
      { name: 'rpm', algorithm: 'fixed-window', counts: 'requests', limit: 3, window: '1m' },
      { name: 'tpm', algorithm: 'fixed-window', limit: 120, window: '1m' },
    ]);
    const first = await b.check('llm', { cost: 50 });
    expect(first.rules.map(({ rule, remaining }) => ({ rule, remaining }))).toEqual([
      { rule: 'override.rpm', remaining: 2 },
      { rule: 'override.tpm', remaining: 70 },
    ]);
    expect(await b.check('llm', { cost: 50 })).toMatchObject({ rule: 'override.rpm', remaining: 1 });
    expect(await b.check('llm', { cost: 50 })).toMatchObject({
      rule: 'override.tpm',
      allowed: false,
      remaining: 20,
    });
    expect(await b.check('llm', { cost: 20 })).toMatchObject({ rule: 'override.rpm', remaining: 0 });
    expect(await b.check('llm', { cost: 1 })).toMatchObject({ rule: 'override.rpm', allowed: false });
    expect((await a.listOverrides())[0]?.value).toBe(
      '{"rules":[{"name":"rpm","algorithm":"fixed-window","limit":3,"window":60000,"counts":"requests"},{"name":"tpm","algorithm":"fixed-window","limit":120,"window":60000}]}',
    );
  });

  it('lists overrides with their remaining time, dropping expired ones; reset keeps an override', async () => {
    const { a, b, clock } = twoProcesses(stores);
    await a.setOverride('blocked', { block: true }, { ttl: '1m' });
    await a.setOverride('upgraded', 'pro');
    await a.setOverride('custom', [{ algorithm: 'gcra', limit: 5, window: '1s', burst: 10 }], { ttl: '1h' });
    clock.now += 1000;
    const byKey = (list: Awaited<ReturnType<Limiter['listOverrides']>>) =>
      [...list].sort((x, y) => x.key.localeCompare(y.key));
    expect(byKey(await b.listOverrides())).toEqual([
      {
        key: 'blocked',
        override: { block: true },
        value: '{"block":true}',
        expiresInMs: MINUTE - 1000,
      },
      {
        key: 'custom',
        override: {
          rules: [{ name: 'gcra-5-per-1s', algorithm: 'gcra', limit: 5, window: 1000, burst: 10 }],
        },
        value: '{"rules":[{"name":"gcra-5-per-1s","algorithm":"gcra","limit":5,"window":1000,"burst":10}]}',
        expiresInMs: 3_600_000 - 1000,
      },
      { key: 'upgraded', override: { plan: 'pro' }, value: '{"plan":"pro"}', expiresInMs: undefined },
    ]);
    clock.now += MINUTE;
    expect((await b.listOverrides()).map((entry) => entry.key).sort()).toEqual(['custom', 'upgraded']);
    await b.reset('upgraded');
    expect(await b.check('upgraded')).toMatchObject({ plan: 'pro' });
    await a.clearOverride('upgraded');
    expect((await b.listOverrides()).map((entry) => entry.key)).toEqual(['custom']);
  });

  it('rejects invalid overrides clearly, before writing anything', async () => {
    const { a } = twoProcesses(stores);
    await expect(a.setOverride('t', 'gold')).rejects.toThrow(
      'override: unknown plan "gold"; the plans are free, pro',
    );
    await expect(a.setOverride('t', { block: false } as never)).rejects.toThrow(
      'override: a block is exactly { block: true }',
    );
    await expect(a.setOverride('t', [{ algorithm: 'gcra', limit: 0, window: '1s' }])).rejects.toThrow(
      'override[0].limit: 0 must be an integer from 1',
    );
    await expect(a.setOverride('t', [])).rejects.toThrow('override: at least one rule is required');
    await expect(a.setOverride('t', 42 as never)).rejects.toThrow(
      'override: expected rules, a plan name or { block: true }, got 42',
    );
    await expect(a.setOverride('t', 'pro', { ttl: 0 })).rejects.toThrow('ttl: 0 must be a whole number');
    await expect(a.setOverride('', 'pro')).rejects.toThrow('key: expected a non-empty string');
    expect(await a.listOverrides()).toEqual([]);
  });

  it('ignores a stored value it cannot apply, reporting it once', async () => {
    const {
      a,
      stores: [store],
      prefix,
    } = twoProcesses(stores);
    const reports: unknown[] = [];
    a.on('invalidOverride', (info) => reports.push(info));
    await store.setOverride(prefix, 't', '{"plan":"platinum"}', undefined);
    expect(await a.check('t')).toMatchObject({ allowed: true, rule: 'free.minute', plan: 'free' });
    expect(await a.check('t')).toMatchObject({ allowed: true, rule: 'free.minute' });
    expect(reports).toEqual([
      {
        key: 't',
        value: '{"plan":"platinum"}',
        cause: new RangeError('override names the plan "platinum", which this limiter does not have'),
      },
    ]);
    await store.setOverride(prefix, 't', 'not json', undefined);
    expect(await a.check('t')).toMatchObject({ allowed: false, rule: 'free.minute' });
    expect(reports).toHaveLength(2);
  });
});

describe('overrides on Redis: round trips and the deny cache', () => {
  it('one script call per check; one more on the first check after another process changes it', async () => {
    const { a, b } = twoProcesses((clock) => [
      redisStore({ client: io, clock }),
      redisStore({ client: node, clock }),
    ]);
    await a.check('warm');
    let before = await scriptCalls(io);
    for (let i = 0; i < 5; i++) await a.check(`t${i}`);
    expect((await scriptCalls(io)) - before).toBe(5);

    await b.setOverride('t0', 'pro');
    before = await scriptCalls(io);
    await a.check('t0');
    expect((await scriptCalls(io)) - before).toBe(2);
    before = await scriptCalls(io);
    for (let i = 0; i < 5; i++) await a.check('t0');
    expect((await scriptCalls(io)) - before).toBe(5);

    await b.setOverride('t0', { block: true });
    before = await scriptCalls(io);
    expect((await a.check('t0')).rule).toBe('override.block');
    expect((await a.check('t0')).rule).toBe('override.block');
    expect((await scriptCalls(io)) - before).toBe(3);
  });

  it('a cleared block is seen at once despite the deny cache; a raised limit after the cached denial', async () => {
    const clock = { now: BASE };
    const prefix = `deny${prefixes++}`;
    const make = (client: Redis | NodeRedisClient) =>
      createLimiter({
        store: redisStore({ client, clock: () => clock.now }),
        plans: PLANS,
        defaultPlan: 'free',
        prefix,
        timeout: '5s',
      });
    const a = make(io);
    const b = make(node);
    await b.setOverride('t', { block: true }, { ttl: '1h' });
    expect((await a.check('t')).allowed).toBe(false);
    await b.clearOverride('t');
    expect(await a.check('t')).toMatchObject({ allowed: true, rule: 'free.minute' });
    await a.check('t');
    // Denied under free: the deny cache answers this key locally until the window ends ...
    expect(await a.check('t')).toMatchObject({ allowed: false, retryAfterMs: MINUTE });
    await b.setOverride('t', 'pro');
    clock.now += MINUTE - 1;
    expect(await a.check('t')).toMatchObject({ allowed: false, rule: 'free.minute', retryAfterMs: 1 });
    // ... and no longer: the next check goes to Redis and sees the override.
    clock.now += 1;
    expect(await a.check('t')).toMatchObject({ allowed: true, rule: 'pro.minute', plan: 'pro' });
  });

  it('while Redis is down, a process keeps applying the block it knows, until its expiry', async () => {
    const own = await startRedisServer();
    const client = new Redis(own.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    try {
      const clock = { now: BASE };
      const limiter = createLimiter({
        store: redisStore({ client, clock: () => clock.now }),
        onStoreError: memoryStore({ clock: () => clock.now }),
        plans: PLANS,
        defaultPlan: 'free',
        timeout: '1s',
      });
      await limiter.setOverride('t', { block: true }, { ttl: '1m' });
      expect(await limiter.check('t')).toMatchObject({
        allowed: false,
        retryAfterMs: MINUTE,
        degraded: false,
      });
      await own.stop();
      clock.now += 1000;
      const during = await limiter.check('t');
      expect(during).toMatchObject({ allowed: false, rule: 'override.block', retryAfterMs: MINUTE - 1000 });
      expect(during.degraded).not.toBe(false);
      clock.now += MINUTE - 1000;
      expect(await limiter.check('t')).toMatchObject({ allowed: true, rule: 'free.minute' });
    } finally {
      client.disconnect();
      await own.stop();
    }
  });
});
