/**
 * The server's clock as a process reads it (src/stores/redis/server-clock.ts): checks carry it, so
 * the script calls TIME no more; a stamp is within half a measured round trip of the server's
 * TIME; a reconnection (a restarted or failed-over server) drops the offset until it is measured
 * again. The skew tests (clock.test.ts, multiprocess.test.ts) hold decisions exact with it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, redisStore } from '../../../src/index.js';
import { createServerClock, SERVER_TIME } from '../../../src/stores/redis/server-clock.js';
import { commandCalls, type RedisServer, startRedisServer } from '../../support/redis-server.js';
import { redisTimeMs } from '../../support/redis-time.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  client = new Redis(server.port, '127.0.0.1');
});

afterAll(async () => {
  client.disconnect();
  await server.stop();
});

/** Stamps until the clock has an offset (its first stamps are SERVER_TIME while it measures). */
async function measuredStamp(stamp: () => string): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const stamped = stamp();
    if (stamped !== SERVER_TIME) return Number(stamped);
    await sleep(10);
  }
  throw new Error('the server clock never measured an offset');
}

describe('the server clock read in this process', () => {
  it('checks stop calling TIME once the offset is measured', async () => {
    const limiter = createLimiter({
      timeout: SLOW_MACHINE_TIMEOUT,
      store: redisStore({ client }),
      rules: { algorithm: 'fixed-window', limit: 1000, window: '1h' },
    });
    // Until the first reading lands, checks go on the script's TIME.
    for (let i = 0; i < 5; i++) await limiter.check('warm');
    await sleep(50);
    const before = await commandCalls(client, 'time');
    for (let i = 0; i < 200; i++) expect((await limiter.check(`stamped-${i}`)).allowed).toBe(true);
    // 200 checks within a second: at most one more reading of the clock, no TIME per check.
    expect((await commandCalls(client, 'time')) - before).toBeLessThanOrEqual(1);
  });

  it.each(['gcra', 'sliding-log'] as const)(
    '%s keeps no time of its key: its checks still read TIME in the script',
    async (algorithm) => {
      const limiter = createLimiter({
        timeout: SLOW_MACHINE_TIMEOUT,
        store: redisStore({ client }),
        rules: { algorithm, limit: 1000, window: '1h' },
      });
      for (let i = 0; i < 5; i++) await limiter.check('warm');
      await sleep(50);
      const before = await commandCalls(client, 'time');
      for (let i = 0; i < 20; i++) await limiter.check(`unstamped-${algorithm}-${i}`);
      expect((await commandCalls(client, 'time')) - before).toBeGreaterThanOrEqual(20);
    },
  );

  it("stamps within half the measured round trip of the server's TIME", async () => {
    const clock = createServerClock(() => client.call('TIME'), client);
    await measuredStamp(clock.stamp);
    const bound = clock.errorMs as number;
    expect(bound).toBeGreaterThanOrEqual(0);
    expect(bound).toBeLessThanOrEqual(10);
    for (let i = 0; i < 20; i++) {
      const before = await redisTimeMs(client);
      const stamped = Number(clock.stamp());
      const after = await redisTimeMs(client);
      // TIME in whole ms (floored on both sides), the stamp off by at most `bound` plus drift.
      expect(stamped).toBeGreaterThanOrEqual(before - Math.ceil(bound) - 1);
      expect(stamped).toBeLessThanOrEqual(after + Math.ceil(bound) + 1);
    }
  });

  it('a reconnection drops the offset, measured again on the new connection', async () => {
    const clock = createServerClock(() => client.call('TIME'), client);
    await measuredStamp(clock.stamp);
    const reconnected = new Promise((resolve) => client.once('ready', resolve));
    client.disconnect(true);
    await reconnected;
    // The server behind the new connection may be another (a failover): no stamp until measured.
    expect(clock.stamp()).toBe(SERVER_TIME);
    expect(clock.errorMs).toBeUndefined();
    const stamped = await measuredStamp(clock.stamp);
    expect(Math.abs(stamped - (await redisTimeMs(client)))).toBeLessThanOrEqual(12);
  });

  it('a server restarted on the same address: the offset is measured again', async () => {
    const restartable = await startRedisServer();
    const own = new Redis(restartable.port, '127.0.0.1', { maxRetriesPerRequest: null });
    // Refused connections while the server is down are expected; unheard, ioredis logs them.
    own.on('error', () => undefined);
    try {
      const clock = createServerClock(() => own.call('TIME'), own);
      await measuredStamp(clock.stamp);
      await restartable.stop();
      const again = await startRedisServer({ port: restartable.port });
      try {
        await new Promise((resolve) => own.once('ready', resolve));
        expect(clock.stamp()).toBe(SERVER_TIME);
        const stamped = await measuredStamp(clock.stamp);
        expect(Math.abs(stamped - (await redisTimeMs(own)))).toBeLessThanOrEqual(12);
      } finally {
        await again.stop();
      }
    } finally {
      own.disconnect();
    }
  });
});
