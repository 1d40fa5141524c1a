/**
 * Blocks and shadow rules beyond the specification table: a block set by one limiter holds for
 * another on the same Redis (another process, as far as the store can tell), the deny cache
 * answers a blocked key locally until the block's end, and bad block options fail at construction.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, type RuleOptions, redisStore, type ScriptRunner } from '../../src/index.js';
import { useRedisServer } from '../support/redis-server.js';

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

const LOGIN: RuleOptions = {
  name: 'login',
  algorithm: 'fixed-window',
  limit: 2,
  window: '1m',
  block: { duration: '15m', factor: 2, max: '1h' },
};
const START = 1_700_006_400_000;

/** A script runner over `redis` that counts its calls, to tell a local answer from a store call. */
function counting(redis: Redis): { runner: ScriptRunner; calls: () => number } {
  let calls = 0;
  const runner: ScriptRunner = {
    evalSha: (sha, keys, args) => {
      calls++;
      return redis.evalsha(sha, keys.length, ...keys, ...args);
    },
    eval: (script, keys, args) => {
      calls++;
      return redis.eval(script, keys.length, ...keys, ...args);
    },
  };
  return { runner, calls: () => calls };
}

describe('blocks across limiters on one Redis', () => {
  it('a block one limiter set denies the key on another until its end, past the window', async () => {
    let now = START;
    const clock = () => now;
    const first = createLimiter({ rules: LOGIN, store: redisStore({ client, clock }), prefix: 'abuse1' });
    const second = createLimiter({ rules: LOGIN, store: redisStore({ client, clock }), prefix: 'abuse1' });
    expect((await first.check('alice')).allowed).toBe(true);
    expect((await first.check('alice')).allowed).toBe(true);
    expect((await first.check('alice')).retryAfterMs).toBe(15 * 60_000);
    now += 5 * 60_000; // a new window: the count alone would allow
    const held = await second.check('alice');
    expect([held.allowed, held.retryAfterMs]).toEqual([false, 10 * 60_000]);
    now += 10 * 60_000;
    expect((await second.check('alice')).allowed).toBe(true);
    expect((await second.check('alice')).allowed).toBe(true);
    // The next block escalates: twice the last.
    expect((await first.check('alice')).retryAfterMs).toBe(30 * 60_000);
    // A reset lifts the block (this process's deny cache included).
    await first.reset('alice');
    expect((await first.check('alice')).allowed).toBe(true);
  });

  it('the deny cache answers a blocked key locally until the block ends', async () => {
    let now = START;
    const clock = () => now;
    const { runner, calls } = counting(client);
    const limiter = createLimiter({
      rules: LOGIN,
      store: redisStore({ client: runner, clock }),
      prefix: 'abuse2',
    });
    await limiter.check('bob');
    await limiter.check('bob');
    expect((await limiter.check('bob')).allowed).toBe(false);
    const before = calls();
    now += 14 * 60_000;
    const cached = await limiter.check('bob');
    expect([cached.allowed, cached.retryAfterMs, calls()]).toEqual([false, 60_000, before]);
    now += 60_000;
    expect((await limiter.check('bob')).allowed).toBe(true);
    expect(calls()).toBe(before + 1);
  });
});

describe('block and shadow options', () => {
  const make = (rule: Record<string, unknown>) => () =>
    createLimiter({ rules: { algorithm: 'fixed-window', limit: 1, window: 1000, ...rule } as RuleOptions });
  it.each([
    [{ block: 0 }, 'rules.block: 0 must be a whole number of milliseconds >= 1'],
    [{ block: '400d' }, 'rules.block: "400d" must be at most 366d'],
    [{ block: { duration: '1m', factor: 0.5 } }, 'rules.block.factor: 0.5 must be a number from 1 to 1000'],
    [
      { block: { duration: '1m', max: '30s' } },
      'rules.block.max: "30s" must be at least the duration (60000 ms)',
    ],
    [{ block: { duration: '1m', forget: '1h' } }, 'rules.block.forget: unknown option; a block takes'],
    [{ block: { factor: 2 } }, 'rules.block.duration: expected a duration'],
    [{ shadow: 'yes' }, 'rules.shadow: "yes" must be true or false'],
  ])('%j is refused with a message naming the option', (rule, message) => {
    expect(make(rule)).toThrow(message);
  });

  it("a shadow limiter's override rules are shadow rules too: counted, named, never denied", async () => {
    const limiter = createLimiter({
      rules: { name: 'minute', algorithm: 'fixed-window', limit: 100, window: '1m' },
      shadow: true,
    });
    await limiter.setOverride('tenant', { name: 'tight', algorithm: 'fixed-window', limit: 1, window: '1m' });
    const first = await limiter.check('tenant');
    const second = await limiter.check('tenant');
    expect([first.allowed, first.shadowDenied]).toEqual([true, []]);
    expect([second.allowed, second.shadowDenied]).toEqual([true, ['override.tight']]);
    await limiter.close();
  });

  it('takes the limiter option shadow, and refuses a non-boolean', () => {
    const rules: RuleOptions = { algorithm: 'fixed-window', limit: 1, window: 1000 };
    expect(() => createLimiter({ rules, shadow: 1 as never })).toThrow('shadow: 1 must be true or false');
  });
});
