/**
 * An overloaded process keeps limiting: deadlines judge Redis, not this process's event loop.
 * Tight loops of checks answered locally, handlers that block the loop, a real SIGSTOP and kill
 * of Redis, and checks issued before the client has connected. One real redis-server for the file;
 * the test that kills it comes last.
 */
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import express from 'express';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/express.js';
import { createLimiter, type Decision, type Limiter, redisStore } from '../../src/index.js';
import { listen } from '../http/support/apps.js';
import { freePort, type RedisServer, startRedisServer } from '../support/redis-server.js';

type Autocannon = (options: { url: string; connections: number; duration: number }) => Promise<{
  requests: { total: number };
  non2xx: number;
  errors: number;
}>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const TIMEOUT = 100;
/** How much later than `timeout` an outage may be noticed: two turns of a loop that is spinning here. */
const MARGIN = 400;
/**
 * For the tests where Redis is healthy: a deadline far above Redis's latency on a loaded 2-core
 * machine (replies there have been seen to take 200 ms), so that any degraded decision is the
 * process's own stall misjudged, which these tests are about.
 */
const HEALTHY_TIMEOUT = 300;
const LOOPS = 16;

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  client = new Redis(server.port, '127.0.0.1', { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  await redisStore({ client }).ready();
});

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

function limiterOn(
  prefix: string,
  limit: number,
  options: Partial<Parameters<typeof createLimiter>[0]> = {},
) {
  return createLimiter({
    store: redisStore({ client }),
    prefix,
    timeout: TIMEOUT,
    rules: { algorithm: 'sliding-window', limit, window: '1h' },
    ...options,
  });
}

interface Tally {
  allowed: number;
  denied: number;
  degraded: Decision[];
}

function tally(): Tally {
  return { allowed: 0, denied: 0, degraded: [] };
}

function count(into: Tally, decision: Decision): void {
  if (decision.allowed) into.allowed++;
  else into.denied++;
  if (decision.degraded !== false) into.degraded.push(decision);
}

/** LOOPS concurrent `await limiter.check(key)` loops until `until` resolves or `ms` pass. */
async function tightLoops(limiter: Limiter, key: string, ms: number): Promise<Tally> {
  const result = tally();
  const stopAt = performance.now() + ms;
  async function loop(): Promise<void> {
    while (performance.now() < stopAt) count(result, await limiter.check(key));
  }
  await Promise.all(Array.from({ length: LOOPS }, loop));
  return result;
}

/** Peeks at a key every 5 ms on a timer while `during` runs: proof that timers run and replies are read. */
async function witness<T>(limiter: Limiter, during: Promise<T>): Promise<{ result: T; seen: Tally }> {
  const seen = tally();
  let done = false;
  const watching = (async () => {
    while (!done) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      count(seen, await limiter.peek('witness'));
    }
  })();
  const result = await during;
  done = true;
  await watching;
  return { result, seen };
}

describe('tight loops of checks answered without I/O', () => {
  it(`regression: ${LOOPS} loops on one key for 2 s admit exactly the limit, and Redis replies keep being read`, async () => {
    const limiter = limiterOn('loops', 100, { timeout: HEALTHY_TIMEOUT });
    // Warm: the first call of a process may load the function library, a few round trips.
    await limiter.peek('witness');
    const { result, seen } = await witness(limiter, tightLoops(limiter, 'victim', 2000));
    expect(result.degraded).toEqual([]);
    expect(result.allowed).toBe(100);
    expect(result.denied).toBeGreaterThan(0);
    expect(seen.degraded).toEqual([]);
    // A timer every 5 ms for 2 s: a starved event loop would run it once, at the end.
    expect(seen.allowed).toBeGreaterThanOrEqual(20);
  });
});

describe('a handler that blocks the event loop under load', () => {
  it('regression: blocking for 2× timeout while autocannon loads Express makes no decision degraded', async () => {
    const limiter = limiterOn('blocking', 100_000_000, { timeout: HEALTHY_TIMEOUT });
    const errors: unknown[] = [];
    limiter.on('storeError', (cause) => errors.push(cause));
    const decisions = tally();
    let blocks = 0;
    let lastBlock = performance.now();
    const app = express();
    app.use(rateLimit({ limiter }));
    app.get('/', async (req, res) => {
      if (req.rateLimit !== undefined) count(decisions, req.rateLimit);
      // 300 ms after the last block, one request checks a second key, then holds the event loop
      // for 2× the deadline before awaiting it: that check is sent only after the stall.
      if (performance.now() - lastBlock > HEALTHY_TIMEOUT) {
        blocks++;
        const second = limiter.check('second');
        const until = performance.now() + 2 * HEALTHY_TIMEOUT;
        while (performance.now() < until) {
          // busy: nothing else runs in this process meanwhile
        }
        lastBlock = performance.now();
        count(decisions, await second);
      }
      res.send('ok');
    });
    const started = await listen(createServer(app));
    try {
      const load = await autocannon({ url: started.url, connections: 16, duration: 2 });
      expect(load.non2xx + load.errors).toBe(0);
    } finally {
      await started.close();
    }
    expect(blocks).toBeGreaterThanOrEqual(2);
    expect(errors).toEqual([]);
    expect(decisions.degraded).toEqual([]);
    expect(decisions.allowed).toBeGreaterThan(0);
  });
});

describe('a real outage while loops spin on a denied key', () => {
  it('SIGSTOP: other keys degrade within timeout + margin; the denied key stays denied', async () => {
    const limiter = limiterOn('stopped', 10);
    while ((await limiter.check('denied')).allowed) {
      // spend the limit
    }
    server.process.kill('SIGSTOP');
    try {
      const started = performance.now();
      const [loops, fresh] = await Promise.all([
        tightLoops(limiter, 'denied', 1000),
        limiter.check('fresh').then((decision) => ({ decision, ms: performance.now() - started })),
      ]);
      expect(fresh.decision).toMatchObject({ allowed: true, degraded: 'timeout' });
      expect(fresh.ms).toBeLessThan(TIMEOUT + MARGIN);
      expect(loops).toMatchObject({ allowed: 0, degraded: [] });
    } finally {
      server.process.kill('SIGCONT');
    }
  });
});

describe('start-up', () => {
  const rules = { algorithm: 'gcra', limit: 5, window: '1h' } as const;

  it('regression: checks issued before the client has connected wait for it (no offline queue)', async () => {
    const fresh = new Redis(server.port, '127.0.0.1', { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    const store = redisStore({ client: fresh });
    const limiter = createLimiter({ store, prefix: 'startup', timeout: '2s', rules });
    try {
      const decisions = await Promise.all(Array.from({ length: 8 }, () => limiter.check('early')));
      expect(decisions.map((decision) => [decision.allowed, decision.degraded])).toEqual([
        ...Array.from({ length: 5 }, () => [true, false]),
        ...Array.from({ length: 3 }, () => [false, false]),
      ]);
      await store.ready();
    } finally {
      fresh.disconnect();
    }
  });

  it('ready() connects a lazyConnect client and resolves once it can answer', async () => {
    const lazy = new Redis(server.port, '127.0.0.1', { lazyConnect: true, enableOfflineQueue: false });
    const store = redisStore({ client: lazy });
    try {
      await store.ready();
      expect(lazy.status).toBe('ready');
      const limiter = createLimiter({ store, prefix: 'lazy', rules });
      expect((await limiter.check('k')).degraded).toBe(false);
    } finally {
      lazy.disconnect();
    }
  });

  it('node-redis: checks issued before connect() wait for it', async () => {
    const node = createClient({ url: server.url });
    const store = redisStore({ client: node });
    const limiter = createLimiter({ store, prefix: 'node-startup', timeout: '2s', rules });
    try {
      const early = limiter.check('k');
      await node.connect();
      expect(await early).toMatchObject({ allowed: true, degraded: false });
    } finally {
      await node.quit();
    }
  });

  it('a client that never connects gets the onStoreError policy within timeout + margin', async () => {
    const port = await freePort();
    const never = new Redis(port, '127.0.0.1', { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    never.on('error', () => {});
    const limiter = createLimiter({
      store: redisStore({ client: never }),
      onStoreError: 'closed',
      timeout: TIMEOUT,
      rules,
    });
    try {
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const decision = await limiter.check('k');
        expect(performance.now() - started).toBeLessThan(TIMEOUT + MARGIN);
        expect(decision).toMatchObject({ allowed: false, degraded: 'timeout' });
      }
    } finally {
      never.disconnect();
    }
  });
});

describe('start-up, client given up', () => {
  it('ready() rejects, and checks fail at once, when the client is closed before it ever connects', async () => {
    const port = await freePort();
    const closed = new Redis(port, '127.0.0.1', { enableOfflineQueue: false, retryStrategy: () => null });
    closed.on('error', () => {});
    const store = redisStore({ client: closed });
    await expect(store.ready()).rejects.toThrow(/closed before it connected/);
    const limiter = createLimiter({
      store,
      timeout: '10s',
      rules: { algorithm: 'gcra', limit: 5, window: '1h' },
    });
    const started = performance.now();
    expect((await limiter.check('k')).degraded).toBe('error');
    expect(performance.now() - started).toBeLessThan(MARGIN);
  });
});

describe('Redis killed', () => {
  it('a key denied before the kill stays denied during the outage; unknown keys fail open', async () => {
    const limiter = limiterOn('killed', 3, { breaker: { failures: 1, cooldown: '10s' } });
    for (let i = 0; i < 4; i++) await limiter.check('known');
    server.process.kill('SIGKILL');
    await new Promise((resolve) => server.process.once('exit', resolve));
    const unknown = await limiter.check('unknown');
    expect(unknown).toMatchObject({ allowed: true });
    expect(unknown.degraded).not.toBe(false);
    const loops = await tightLoops(limiter, 'known', 500);
    expect(loops).toMatchObject({ allowed: 0, degraded: [] });
    expect((await limiter.check('unknown')).degraded).toBe('unavailable');
  });
});
