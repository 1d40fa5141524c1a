/**
 * quotaLease on one real Redis, in one process: option validation, slices that cost few store
 * calls and never admit above the limit, idle and close() give-backs, settle, overrides, reset,
 * and the memory store that ignores it. Several processes and a cluster: multiprocess-lease.test.ts.
 */

import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { IDLE_MS } from '../../src/core/leases.js';
import {
  type AlgorithmName,
  createLimiter,
  type Limiter,
  memoryStore,
  type RuleOptions,
  redisStore,
} from '../../src/index.js';
import { type RedisServer, scriptCalls, useRedisServer } from '../support/redis-server.js';
import { withinOneWindow } from '../support/redis-time.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';

let server: RedisServer;
let client: Redis;
useRedisServer((started) => {
  server = started.server;
  client = started.client;
});

const HOUR = 3_600_000;
let prefixes = 0;

function leasing(rules: RuleOptions | RuleOptions[], prefix: string): Limiter {
  return createLimiter({
    rules,
    store: redisStore({ client: new Redis(server.port, '127.0.0.1') }),
    prefix,
    timeout: SLOW_MACHINE_TIMEOUT,
  });
}

/** A limiter on the same state without quotaLease: what the store itself holds. */
function plain(rules: RuleOptions, prefix: string): Limiter {
  const { quotaLease: _, ...rest } = rules;
  return createLimiter({ rules: rest, store: redisStore({ client }), prefix, timeout: SLOW_MACHINE_TIMEOUT });
}

/** Units the store has left for `key`: a peek shows what would be left after one more check. */
async function storeLeft(rule: RuleOptions, prefix: string, key: string): Promise<number> {
  return (await plain(rule, prefix).peek(key)).remaining + 1;
}

async function admittedOf(limiter: Limiter, key: string, checks: number, lanes: number): Promise<number> {
  let admitted = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next++ < checks) if ((await limiter.check(key)).allowed) admitted++;
    }),
  );
  return admitted;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('quotaLease options', () => {
  const base = { algorithm: 'fixed-window', limit: 100, window: '1s' } as const;
  it.each([
    [
      { algorithm: 'sliding-log', limit: 10, window: '1s', quotaLease: true },
      "rules.quotaLease: not allowed for 'sliding-log': only 'fixed-window', 'sliding-window', 'token-bucket' and 'gcra' rules can lease quota",
    ],
    [
      { algorithm: 'concurrency', limit: 10, quotaLease: true },
      "rules.quotaLease: not allowed for 'concurrency': only 'fixed-window', 'sliding-window', 'token-bucket' and 'gcra' rules can lease quota",
    ],
    [{ ...base, quotaLease: { max: 0 } }, 'rules.quotaLease.max: 0 must be an integer from 1 to 100'],
    [{ ...base, quotaLease: { max: 101 } }, 'rules.quotaLease.max: 101 must be an integer from 1 to 100'],
    [{ ...base, quotaLease: { size: 5 } }, 'rules.quotaLease.size: unknown option; quotaLease takes max'],
    [{ ...base, quotaLease: 'yes' }, 'rules.quotaLease: expected true or { max }, got "yes"'],
    [
      { ...base, quotaLease: true, block: '1m' },
      'rules.quotaLease: not allowed with block: slices are admitted locally, where a block cannot start',
    ],
    [
      { ...base, quotaLease: true, shadow: true },
      'rules.quotaLease: not allowed with shadow: slices are admitted locally, where a shadow rule cannot report its would-be denials',
    ],
  ])('refuses %j', (rule, message) => {
    expect(() => createLimiter({ rules: rule as RuleOptions })).toThrow(message);
  });

  it('refuses a rule set where only some rules lease', () => {
    expect(() =>
      createLimiter({
        rules: [
          { ...base, quotaLease: true },
          { ...base, name: 'other' },
        ],
      }),
    ).toThrow(
      'rules: quotaLease is set on 1 of 2 rules; set it on every rule of a rule set or on none (a check is answered from slices only when all its rules have one)',
    );
  });

  it('is ignored by the memory store: one process, one round trip costs nothing', async () => {
    const limiter = createLimiter({
      rules: { ...base, limit: 5, window: HOUR, quotaLease: true },
      store: memoryStore(),
    });
    expect(await admittedOf(limiter, 'k', 20, 1)).toBe(5);
  });
});

describe('quotaLease on Redis', () => {
  it.each<[AlgorithmName, RuleOptions['window']]>([
    ['fixed-window', HOUR],
    ['sliding-window', HOUR],
    ['token-bucket', HOUR * 24],
    ['gcra', HOUR * 24],
  ])('%s: concurrent checks of a hot key admit exactly the limit', async (algorithm, window) => {
    const rule: RuleOptions = { algorithm, limit: 300, window, quotaLease: true };
    const admitted = await withinOneWindow(client, HOUR, async (attempt) => {
      const limiter = leasing(rule, `exact${prefixes++}`);
      const result = await admittedOf(limiter, `k${attempt}`, 1200, 16);
      await limiter.close();
      return result;
    });
    expect(admitted).toBe(300);
  });

  it('answers most checks of a hot key from slices; close() gives the rest back', async () => {
    const rule: RuleOptions = { algorithm: 'fixed-window', limit: 100_000, window: HOUR, quotaLease: true };
    const prefix = `slices${prefixes++}`;
    const { calls, remaining } = await withinOneWindow(client, HOUR, async (attempt) => {
      const limiter = leasing(rule, prefix);
      await client.config('RESETSTAT');
      const admitted = await admittedOf(limiter, `k${attempt}`, 5000, 1);
      const calls = await scriptCalls(client);
      await limiter.close();
      expect(admitted).toBe(5000);
      return { calls, remaining: await storeLeft(rule, prefix, `k${attempt}`) };
    });
    // 8 cold checks, then slices that grow to `max` (1000) with the key's rate.
    expect(calls).toBeLessThanOrEqual(40);
    expect(remaining).toBe(100_000 - 5000);
  });

  it('never uses a fixed-window slice after the window it was taken in (store clock)', async () => {
    let now = 7_000_000; // a window start
    const store = redisStore({ client, clock: () => now });
    const rule: RuleOptions = {
      algorithm: 'fixed-window',
      limit: 100,
      window: 1000,
      quotaLease: { max: 50 },
    };
    const limiter = createLimiter({
      rules: rule,
      store,
      prefix: `late${prefixes++}`,
      timeout: SLOW_MACHINE_TIMEOUT,
    });
    // 8 checks make the key hot; the 9th takes a slice (9 units: the key's rate over 100 ms).
    expect(await admittedOf(limiter, 'k', 9, 1)).toBe(9);
    now += 999;
    expect((await limiter.check('k')).allowed).toBe(true);
    // The slice still holds 7 units, which count in the window that just ended.
    now += 1;
    expect(await admittedOf(limiter, 'k', 300, 4)).toBe(100);
    await limiter.close();
  });

  it('gives an idle key its unused units back', async () => {
    const rule: RuleOptions = { algorithm: 'sliding-window', limit: 10_000, window: HOUR, quotaLease: true };
    const prefix = `idle${prefixes++}`;
    const limiter = leasing(rule, prefix);
    const [held, returned] = await withinOneWindow(client, HOUR, async (attempt) => {
      await admittedOf(limiter, `k${attempt}`, 200, 1);
      const held = await storeLeft(rule, prefix, `k${attempt}`);
      await sleep(IDLE_MS * 4);
      return [held, await storeLeft(rule, prefix, `k${attempt}`)];
    });
    expect(held).toBeLessThan(10_000 - 200);
    expect(returned).toBe(10_000 - 200);
    await limiter.close();
  });

  it('settles a decision answered from a slice in the store', async () => {
    const rule: RuleOptions = { algorithm: 'fixed-window', limit: 1000, window: HOUR, quotaLease: true };
    const prefix = `settle${prefixes++}`;
    const remaining = await withinOneWindow(client, HOUR, async (attempt) => {
      const limiter = leasing(rule, prefix);
      await admittedOf(limiter, `k${attempt}`, 50, 1);
      const decision = await limiter.check(`k${attempt}`, { cost: 10 });
      expect(decision.allowed).toBe(true);
      await limiter.settle(decision, 0);
      await limiter.close();
      return storeLeft(rule, prefix, `k${attempt}`);
    });
    expect(remaining).toBe(1000 - 50);
  });

  it("applies another process's override from this process's next take", async () => {
    const rule: RuleOptions = {
      algorithm: 'fixed-window',
      limit: 1000,
      window: HOUR,
      quotaLease: { max: 5 },
    };
    const prefix = `override${prefixes++}`;
    const limiter = leasing(rule, prefix);
    await admittedOf(limiter, 'k', 20, 1);
    await plain(rule, prefix).setOverride('k', { algorithm: 'fixed-window', limit: 3, window: HOUR });
    // At most the slice held (max 5) is answered under the old rules; then the override applies.
    const decisions = [];
    for (let i = 0; i < 10; i++) decisions.push(await limiter.check('k'));
    const underOverride = decisions.filter((decision) => decision.rule === 'override.fixed-window-3-per-1h');
    expect(underOverride.length).toBeGreaterThanOrEqual(5);
    expect(underOverride.filter((decision) => decision.allowed).length).toBe(3);
    await limiter.close();
  });

  it('a take that times out (Redis paused) is answered by onStoreError, and loses at most its slice', async () => {
    const rule: RuleOptions = {
      algorithm: 'fixed-window',
      limit: 1000,
      window: HOUR,
      quotaLease: { max: 1 },
    };
    const prefix = `paused${prefixes++}`;
    const limiter = createLimiter({
      rules: rule,
      store: redisStore({ client: new Redis(server.port, '127.0.0.1') }),
      prefix,
      timeout: '50ms',
      onStoreError: 'open',
    });
    const [admitted, degraded, left] = await withinOneWindow(client, HOUR, async (attempt) => {
      const key = `k${attempt}`;
      // Hot, with slices of one unit: every check takes one.
      let admitted = await admittedOf(limiter, key, 20, 1);
      await client.client('PAUSE', 300, 'ALL');
      const during = await limiter.check(key);
      await sleep(400);
      admitted += await admittedOf(limiter, key, 20, 1);
      return [admitted, during.degraded, await storeLeft(rule, prefix, key)];
    });
    expect(degraded).toBe('timeout');
    expect(admitted).toBe(40);
    // The timed-out take and the timed-out check ran once Redis was back: one unit each, not admitted.
    expect(1000 - admitted - left).toBeGreaterThanOrEqual(0);
    expect(1000 - admitted - left).toBeLessThanOrEqual(2);
    await limiter.close();
  });

  it('close() waits for the give-back at most the store deadline (Redis paused)', async () => {
    const limiter = createLimiter({
      rules: { algorithm: 'fixed-window', limit: 1000, window: HOUR, quotaLease: { max: 50 } },
      store: redisStore({ client: new Redis(server.port, '127.0.0.1') }),
      prefix: `close${prefixes++}`,
      timeout: '50ms',
    });
    await admittedOf(limiter, 'k', 40, 4);
    // Writes (the give-back's script) wait; this client's UNPAUSE does not.
    await client.client('PAUSE', 10_000, 'WRITE');
    try {
      const closed = await Promise.race([limiter.close().then(() => true), sleep(5000).then(() => false)]);
      expect(closed).toBe(true);
    } finally {
      await client.client('UNPAUSE');
    }
  });

  it('reset forgets the slices of the key', async () => {
    const rule: RuleOptions = { algorithm: 'fixed-window', limit: 1000, window: HOUR, quotaLease: true };
    const prefix = `reset${prefixes++}`;
    const limiter = leasing(rule, prefix);
    await withinOneWindow(client, HOUR, async () => {
      await admittedOf(limiter, 'k', 100, 1);
      await limiter.reset('k');
      const decision = await limiter.check('k');
      expect(decision.allowed).toBe(true);
      expect(decision.remaining).toBe(999);
    });
    await limiter.close();
  });
});
