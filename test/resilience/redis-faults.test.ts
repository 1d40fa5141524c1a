/**
 * Failure behaviour against a real redis-server that the test stops, pauses, kills, restarts
 * and flushes. One server per file; the faults run in sequence on it.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Decision, memoryStore, redisStore } from '../../src/index.js';
import { type RedisServer, scriptCalls, startRedisServer } from '../support/redis-server.js';

let server: RedisServer;
let client: Redis;
let admin: Redis;
const TIMEOUT = 100;
// Generous for a shared 2-core machine; without the deadline these checks would wait seconds.
const MARGIN = 400;

beforeAll(async () => {
  server = await startRedisServer();
  // Default ioredis settings on purpose: offline queue on, 20 retries per request.
  client = new Redis(server.port, '127.0.0.1');
  admin = new Redis(server.port, '127.0.0.1');
  // The kill test makes connection errors on purpose; Floodgate reports them through its own events.
  client.on('error', () => {});
  admin.on('error', () => {});
  // Connected, and the function library loaded: a first call does several round trips, which a
  // busy machine can stretch past the 100 ms the timed tests allow.
  await createLimiter({
    store: redisStore({ client }),
    prefix: 'warm',
    timeout: '10s',
    rules: { algorithm: 'gcra', limit: 1, window: '1s' },
  }).check('warm');
});

afterAll(async () => {
  client?.disconnect();
  admin?.disconnect();
  await server?.stop();
});

async function timed(work: Promise<Decision>): Promise<{ decision: Decision; ms: number }> {
  const started = performance.now();
  const decision = await work;
  return { decision, ms: performance.now() - started };
}

async function waitFor(condition: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Date.now() - started;
}

describe('Redis paused with SIGSTOP mid-load', () => {
  it('answers every check within the deadline (fail open), flags it, and recovers after resume', async () => {
    const limiter = createLimiter({
      store: redisStore({ client }),
      prefix: 'stop',
      timeout: TIMEOUT,
      rules: { algorithm: 'sliding-window', limit: 1000, window: '1m' },
    });
    const events: string[] = [];
    limiter.on('degraded', ({ reason }) => events.push(`degraded:${reason}`));
    limiter.on('recovered', () => events.push('recovered'));
    expect((await limiter.check('a')).degraded).toBe(false);

    server.process.kill('SIGSTOP');
    try {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => timed(limiter.check(`k${i % 5}`))),
      );
      for (const { decision, ms } of results) {
        expect(ms).toBeLessThan(TIMEOUT + MARGIN);
        expect(decision.allowed).toBe(true);
        expect(decision.degraded).toBe('timeout');
      }
      // The breaker is open now: checks are answered at once without calling Redis.
      const after = await timed(limiter.check('k1'));
      expect(after.decision.degraded).toBe('unavailable');
      expect(after.ms).toBeLessThan(MARGIN);
    } finally {
      server.process.kill('SIGCONT');
    }
    const recoveredIn = await waitFor(async () => (await limiter.check('a')).degraded === false, 1000);
    expect(recoveredIn).toBeLessThanOrEqual(1000);
    expect(events).toEqual(['degraded:timeout', 'recovered']);
  });
});

describe('CLIENT PAUSE with onStoreError closed', () => {
  it('denies within the deadline, with a retry time, and flags it', async () => {
    const limiter = createLimiter({
      store: redisStore({ client }),
      prefix: 'pause',
      timeout: TIMEOUT,
      onStoreError: 'closed',
      rules: { algorithm: 'gcra', limit: 100, window: '1s' },
    });
    await admin.call('CLIENT', 'PAUSE', '700', 'ALL');
    const results = await Promise.all(Array.from({ length: 20 }, () => timed(limiter.check('p'))));
    for (const { decision, ms } of results) {
      expect(ms).toBeLessThan(TIMEOUT + MARGIN);
      expect(decision.allowed).toBe(false);
      expect(decision.degraded).toBe('timeout');
      expect(decision.retryAfterMs).toBeGreaterThan(0);
    }
    await waitFor(async () => (await limiter.check('p')).degraded === false, 2000);
  });
});

describe('fallback store during an outage', () => {
  it('enforces the same rules locally while Redis is stopped', async () => {
    const limiter = createLimiter({
      store: redisStore({ client }),
      prefix: 'fallback',
      timeout: TIMEOUT,
      onStoreError: memoryStore(),
      breaker: { failures: 1, cooldown: '10s' },
      rules: { algorithm: 'fixed-window', limit: 5, window: '1h' },
    });
    server.process.kill('SIGSTOP');
    try {
      const first = await limiter.check('f');
      expect(first.degraded).toBe('timeout');
      const rest = [];
      for (let i = 0; i < 19; i++) rest.push(await limiter.check('f'));
      expect(rest.every((decision) => decision.degraded === 'unavailable')).toBe(true);
      expect([first, ...rest].filter((decision) => decision.allowed)).toHaveLength(5);
      expect(rest.at(-1)).toMatchObject({ allowed: false, remaining: 0 });
    } finally {
      server.process.kill('SIGCONT');
    }
  });
});

describe('SCRIPT FLUSH during load', () => {
  it('shows callers zero errors and counts every request exactly once', async () => {
    const limiter = createLimiter({
      store: redisStore({ client }),
      prefix: 'flush',
      timeout: 2000,
      rules: { algorithm: 'sliding-log', limit: 300, window: '1h' },
    });
    const errors: unknown[] = [];
    limiter.on('storeError', (cause) => errors.push(cause));
    const decisions: Decision[] = [];
    for (let wave = 0; wave < 10; wave++) {
      await admin.script('FLUSH');
      decisions.push(...(await Promise.all(Array.from({ length: 40 }, () => limiter.check('flushed')))));
    }
    expect(errors).toEqual([]);
    expect(decisions.every((decision) => decision.degraded === false)).toBe(true);
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(300);
  });
});

describe('timed-out calls are not replayed', () => {
  it('a check that times out while Redis is paused is applied once, when Redis resumes', async () => {
    const limiter = createLimiter({
      store: redisStore({ client }),
      prefix: 'replay',
      timeout: 50,
      rules: { algorithm: 'fixed-window', limit: 10, window: '1h' },
    });
    await admin.call('CLIENT', 'PAUSE', '300', 'WRITE');
    const decision = await limiter.check('once');
    expect(decision.degraded).toBe('timeout');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await limiter.peek('once');
    expect(after.degraded).toBe(false);
    expect(after.remaining).toBe(8); // 10 − the timed-out check − the one this peek would take
  });
});

describe('the deny cache', () => {
  it('answers a flood from one blocked key with a handful of Redis calls, and lets it through on time', async () => {
    const limiter = createLimiter({
      store: redisStore({ client }),
      prefix: 'flood',
      rules: { algorithm: 'fixed-window', limit: 10, window: 3000 },
    });
    // Start at the beginning of a window so the whole flood falls inside one, even on a loaded machine.
    await waitFor(async () => Date.now() % 3000 < 50, 3500);
    const before = await scriptCalls(admin);
    let allowed = 0;
    for (let i = 0; i < 5000; i++) if ((await limiter.check('flooder')).allowed) allowed++;
    const used = (await scriptCalls(admin)) - before;
    expect(allowed).toBe(10);
    expect(used).toBeLessThanOrEqual(10 + 5);
    await waitFor(async () => (await limiter.check('flooder')).allowed, 3500);
  });
});

describe('the deny cache with rules that count requests', () => {
  const rpm = { name: 'rpm', algorithm: 'sliding-log', counts: 'requests', limit: 2, window: '1h' } as const;
  const tpm = { name: 'tpm', algorithm: 'sliding-log', limit: 1000, window: '1h' } as const;

  /** The Redis script calls `checks` made, and each check's binding rule and whether it was allowed. */
  async function calls(checks: () => Promise<Decision[]>) {
    const before = await scriptCalls(admin);
    const decisions = await checks();
    return {
      used: (await scriptCalls(admin)) - before,
      seen: decisions.map(({ rule, allowed }) => `${rule}:${allowed}`),
    };
  }

  it('rules that all count requests: one denial covers every cost', async () => {
    const limiter = createLimiter({ store: redisStore({ client }), prefix: 'deny-requests', rules: rpm });
    // Its script loaded first (a first call may take two); then one after another: concurrent
    // checks would share one batched script call.
    await limiter.peek('warm');
    const costs = (list: number[]) => async () => {
      const decisions: Decision[] = [];
      for (const cost of list) decisions.push(await limiter.check('k', { cost }));
      return decisions;
    };
    expect(await calls(costs([1000, 1000, 1000]))).toEqual({
      used: 3,
      seen: ['rpm:true', 'rpm:true', 'rpm:false'],
    });
    expect(await calls(costs([1, 5000, 3]))).toEqual({
      used: 0,
      seen: ['rpm:false', 'rpm:false', 'rpm:false'],
    });
    // Settling changes only rules that count cost: with none, no store call at all.
    const admitted = await limiter.check('other', { cost: 50 });
    const settle = async () => {
      await limiter.settle(admitted, 5);
      return [admitted];
    };
    expect(await calls(settle)).toEqual({ used: 0, seen: ['rpm:true'] });
  });

  it('a cost over a request rule limit is cached when the cost rules could take it later', async () => {
    const limiter = createLimiter({ store: redisStore({ client }), prefix: 'deny-mixed', rules: [rpm, tpm] });
    const check = (cost: number) => () => limiter.check('k', { cost }).then((one) => [one]);
    await limiter.check('k', { cost: 10 });
    await limiter.check('k', { cost: 10 });
    expect(await calls(check(5))).toEqual({ used: 1, seen: ['rpm:false'] });
    expect(await calls(check(5))).toEqual({ used: 0, seen: ['rpm:false'] });
    // A smaller cost may fit the cost rules: not covered; over tpm's capacity: never cached.
    expect(await calls(check(3))).toEqual({ used: 1, seen: ['rpm:false'] });
    expect(await calls(check(2000))).toEqual({ used: 1, seen: ['tpm:false'] });
    expect(await calls(check(2000))).toEqual({ used: 1, seen: ['tpm:false'] });
  });
});

describe('Redis killed, then restarted empty on the same port', () => {
  it('keeps answering (fail open), never rejects, and resumes without restarting the app', async () => {
    const limiter = createLimiter({
      store: redisStore({ client }),
      prefix: 'restart',
      timeout: TIMEOUT,
      rules: { algorithm: 'token-bucket', limit: 50, window: '1s' },
    });
    expect((await limiter.check('r')).degraded).toBe(false);
    const port = server.port;
    server.process.kill('SIGKILL');
    await new Promise((resolve) => server.process.once('exit', resolve));
    const during = await Promise.all(Array.from({ length: 20 }, () => timed(limiter.check('r'))));
    for (const { decision, ms } of during) {
      expect(ms).toBeLessThan(TIMEOUT + MARGIN);
      expect(decision.allowed).toBe(true);
      expect(decision.degraded).not.toBe(false);
    }
    server = await startRedisServer({ port });
    // The new server has no script cached: the NOSCRIPT fallback must carry the first call.
    await waitFor(async () => (await limiter.check('r')).degraded === false, 5000);
    const decision = await limiter.check('r');
    expect(decision).toMatchObject({ allowed: true, degraded: false });
  });
});

describe('bad configuration fails at construction', () => {
  const rules = { algorithm: 'gcra', limit: 1, window: '1s' } as const;
  it.each([
    [{ timeout: -1 }, /timeout: -1 must be a whole number of milliseconds >= 1/],
    [{ timeout: 'soon' }, /timeout: "soon" is not a duration/],
    [{ onStoreError: 'ignore' }, /onStoreError: "ignore" must be 'open', 'closed' or a fallback store/],
    [{ breaker: { failures: 0 } }, /breaker.failures: 0 must be an integer from 1/],
    [{ breaker: { cooldown: 0 } }, /breaker.cooldown: 0 must be a whole number of milliseconds >= 1/],
    [{ denyCache: { maxKeys: -5 } }, /denyCache.maxKeys: -5 must be an integer from 1/],
  ])('%o', (options, message) => {
    expect(() => createLimiter({ rules, ...(options as object) })).toThrow(message);
  });
});
