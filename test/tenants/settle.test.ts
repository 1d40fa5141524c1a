/**
 * Reserve, then settle: what the specification table cannot show (errors, no-ops, round trips,
 * the deny cache, degraded decisions and a failing store), on the memory store and a real Redis.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, memoryStore, redisStore, type Store } from '../../src/index.js';
import { freePort, scriptCalls, startRedisServer, useRedisServer } from '../support/redis-server.js';

let io: Redis;
useRedisServer((started) => {
  io = started.client;
});

const BASE = 1_700_006_400_000;
const RULES = { name: 'tokens', algorithm: 'sliding-log', limit: 1000, window: '1h' } as const;
let prefixes = 0;

const setups = [
  { name: 'memory store', store: (clock: () => number): Store => memoryStore({ clock }) },
  { name: 'Redis', store: (clock: () => number): Store => redisStore({ client: io, clock }) },
];

describe.each(setups)('settle on the $name', ({ store }) => {
  function limiter(): Limiter {
    return createLimiter({
      store: store(() => BASE),
      rules: RULES,
      prefix: `settle${prefixes++}`,
      timeout: '5s',
    });
  }

  it('gives back and charges the difference', async () => {
    const llm = limiter();
    const reserved = await llm.check('org', { cost: 400 });
    await llm.settle(reserved, 130);
    expect(await llm.peek('org')).toMatchObject({ remaining: 869 });
    const second = await llm.check('org', { cost: 100 });
    await llm.settle(second, 250);
    expect(await llm.peek('org')).toMatchObject({ remaining: 619 });
  });

  it('settles a decision once; a copy, a peek or another limiter’s decision is refused', async () => {
    const llm = limiter();
    const other = limiter();
    const decision = await llm.check('org', { cost: 10 });
    await expect(llm.settle({ ...decision }, 5)).rejects.toThrow(
      'settle: this decision was not returned by check() of this limiter',
    );
    await expect(llm.settle(await llm.peek('org'), 5)).rejects.toThrow(TypeError);
    await expect(other.settle(decision, 5)).rejects.toThrow(TypeError);
    await expect(llm.settle(null as never, 5)).rejects.toThrow(TypeError);
    await llm.settle(decision, 5);
    await expect(llm.settle(decision, 5)).rejects.toThrow('settle: this decision was settled already');
    expect(await llm.peek('org')).toMatchObject({ remaining: 994 });
  });

  it.each([
    [-1, 'actualCost: -1 must be an integer from 0 to 9007199254740991'],
    [2.5, 'actualCost: 2.5 must be an integer from 0'],
    ['3', 'actualCost: "3" must be an integer from 0'],
    [Number.NaN, 'actualCost: NaN must be an integer from 0'],
    [2 ** 53, 'actualCost: 9007199254740992 must be an integer from 0'],
  ])('rejects the actual cost %s, leaving the decision settleable', async (actual, message) => {
    const llm = limiter();
    const decision = await llm.check('org', { cost: 10 });
    await expect(llm.settle(decision, actual as number)).rejects.toThrow(message);
    await llm.settle(decision, 0);
    expect(await llm.peek('org')).toMatchObject({ remaining: 999 });
  });

  it('a denied decision reserved nothing: settling it (even twice) changes nothing', async () => {
    const llm = limiter();
    await llm.check('org', { cost: 1000 });
    const denied = await llm.check('org', { cost: 10 });
    expect(denied.allowed).toBe(false);
    await llm.settle(denied, 0);
    await llm.settle(denied, 500);
    expect(await llm.peek('org')).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('rejects invalid costs at check time', async () => {
    const llm = limiter();
    for (const cost of [0, -1, 1.5, '2', Number.POSITIVE_INFINITY]) {
      await expect(llm.check('org', { cost: cost as number })).rejects.toThrow(
        /^cost: .* must be an integer from 1 to 9007199254740991$/,
      );
    }
  });
});

describe('settle on Redis: round trips, the deny cache and failures', () => {
  it('is one script call, none when the estimate was right', async () => {
    const llm = createLimiter({
      store: redisStore({ client: io }),
      rules: RULES,
      prefix: `rt${prefixes++}`,
      timeout: '5s',
    });
    const exact = await llm.check('org', { cost: 10 });
    const off = await llm.check('org', { cost: 10 });
    const before = await scriptCalls(io);
    await llm.settle(exact, 10);
    expect((await scriptCalls(io)) - before).toBe(0);
    await llm.settle(off, 3);
    expect((await scriptCalls(io)) - before).toBe(1);
  });

  it('a refund clears this process’s cached denial of the key', async () => {
    const clock = { now: BASE };
    const llm = createLimiter({
      store: redisStore({ client: io, clock: () => clock.now }),
      rules: { algorithm: 'fixed-window', limit: 10, window: '1h' },
      prefix: `dc${prefixes++}`,
      timeout: '5s',
    });
    const big = await llm.check('org', { cost: 10 });
    expect((await llm.check('org')).allowed).toBe(false);
    const before = await scriptCalls(io);
    expect((await llm.check('org')).allowed).toBe(false);
    expect((await scriptCalls(io)) - before).toBe(0);
    await llm.settle(big, 4);
    expect(await llm.check('org')).toMatchObject({ allowed: true, remaining: 5 });
  });

  it('a decision answered while the store was down (fail open) reserved nothing: settling is a no-op', async () => {
    const dead = new Redis(await freePort(), '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    dead.on('error', () => {});
    const llm = createLimiter({ store: redisStore({ client: dead }), rules: RULES, timeout: 200 });
    const decision = await llm.check('org', { cost: 50 });
    expect(decision).toMatchObject({ allowed: true });
    expect(decision.degraded).not.toBe(false);
    await llm.settle(decision, 10);
    await expect(llm.settle(decision, 10)).rejects.toThrow('settled already');
    dead.disconnect();
  });

  it('a reservation made in the fallback store is settled there', async () => {
    const dead = new Redis(await freePort(), '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    dead.on('error', () => {});
    const fallback = memoryStore();
    const llm = createLimiter({ store: redisStore({ client: dead }), onStoreError: fallback, rules: RULES });
    const decision = await llm.check('org', { cost: 50 });
    expect(decision.degraded).not.toBe(false);
    await llm.settle(decision, 10);
    const local = createLimiter({ store: fallback, rules: RULES });
    expect(await local.peek('org')).toMatchObject({ remaining: 989 });
    dead.disconnect();
  });

  it('a store that fails while settling is reported as storeError, never thrown', async () => {
    const own = await startRedisServer();
    const client = new Redis(own.port, '127.0.0.1', { maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    try {
      const llm = createLimiter({ store: redisStore({ client }), rules: RULES, timeout: '1s' });
      const errors: unknown[] = [];
      llm.on('storeError', (cause) => errors.push(cause));
      const decision = await llm.check('org', { cost: 50 });
      expect(decision.degraded).toBe(false);
      await own.stop();
      await llm.settle(decision, 10);
      expect(errors).toHaveLength(1);
    } finally {
      client.disconnect();
      await own.stop();
    }
  });
});
