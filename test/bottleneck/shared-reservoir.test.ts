/**
 * The reservoir of limiters with one id on Redis, as Bottleneck keeps it there: one level for
 * every limiter (each on its own connection, as separate processes would be), set by the first,
 * replaced by clearDatastore, changed for all by updateSettings and incrementReservoir, refilled
 * on the server's clock, and never spent by a job that did not start.
 */
import { afterEach, describe, expect, it } from 'vitest';
import Bottleneck from '../../src/bottleneck/index.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});

const opened: Bottleneck[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((limiter) => limiter.disconnect()));
});

/** A limiter on a connection of its own. */
async function limiterOf(options: Record<string, unknown>): Promise<Bottleneck> {
  const limiter = new Bottleneck({
    datastore: 'ioredis',
    clientOptions: { host: '127.0.0.1', port: server.port },
    ...options,
  });
  opened.push(limiter);
  await limiter.ready();
  return limiter;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a reservoir shared by limiters with one id', () => {
  it('is one level: jobs of one limiter spend it for the other, whose job waits for an increment', async () => {
    const a = await limiterOf({ id: 'one-level', reservoir: 3 });
    const b = await limiterOf({ id: 'one-level', reservoir: 3 });
    await Promise.all([1, 2, 3].map(() => a.schedule(async () => 'ran')));
    expect(await b.currentReservoir()).toBe(0);
    expect(await b.check()).toBe(false);
    let ran = false;
    const waiting = b.schedule(async () => {
      ran = true;
    });
    await sleep(300);
    expect(ran).toBe(false);
    // Another limiter's increment reaches this one's waiting head within its once-a-second look.
    expect(await a.incrementReservoir(1)).toBe(1);
    const asked = Date.now();
    await waiting;
    expect(Date.now() - asked).toBeLessThan(2_000);
    expect(await a.currentReservoir()).toBe(0);
  });

  it('the first limiter of an id sets it; clearDatastore replaces it; updateSettings changes it for all', async () => {
    const first = await limiterOf({ id: 'settings', reservoir: 7 });
    const second = await limiterOf({ id: 'settings', reservoir: 100 });
    expect(await second.currentReservoir()).toBe(7);
    const clearing = await limiterOf({ id: 'settings', reservoir: 2, clearDatastore: true });
    expect(await clearing.currentReservoir()).toBe(2);
    expect(await first.currentReservoir()).toBe(2);
    await second.updateSettings({ reservoir: 5 });
    expect(await first.currentReservoir()).toBe(5);
    expect(await clearing.currentReservoir()).toBe(5);
  });

  it('refreshes on the server clock for every limiter, whichever is alive; depleted when it reaches 0', async () => {
    const setter = await limiterOf({
      id: 'refresh',
      reservoir: 1,
      reservoirRefreshInterval: 250,
      reservoirRefreshAmount: 2,
    });
    const user = await limiterOf({ id: 'refresh' });
    const depleted: boolean[] = [];
    user.on('depleted', (empty: boolean) => depleted.push(empty));
    const starts: number[] = [];
    const t0 = Date.now();
    await Promise.all([1, 2, 3].map(() => user.schedule(async () => starts.push(Date.now() - t0))));
    expect(depleted.length).toBeGreaterThanOrEqual(1);
    // One at once, then two at the refresh.
    expect(starts[0]).toBeLessThan(200);
    expect(starts[1]).toBeGreaterThanOrEqual(200);
    expect(starts[2]).toBeGreaterThanOrEqual(200);
    expect(await setter.currentReservoir()).toBe(0);
  });

  it('a job the rules hold back gives its weight back: the reservoir pays only for jobs that start', async () => {
    const limiter = await limiterOf({ id: 'give-back', reservoir: 10, maxConcurrent: 1 });
    const other = await limiterOf({ id: 'give-back', maxConcurrent: 1 });
    const job = () => sleep(120);
    await Promise.all([
      limiter.schedule({ weight: 1 }, job),
      other.schedule({ weight: 1 }, job),
      limiter.schedule({ weight: 1 }, job),
    ]);
    expect(await limiter.currentReservoir()).toBe(7);
  });

  it('a job heavier than what is left waits, one of weight 0 does not; a limiter without a reservoir on its id takes nothing', async () => {
    const limiter = await limiterOf({ id: 'heavy', reservoir: 2 });
    let ran = false;
    const heavy = limiter.schedule({ weight: 3 }, async () => {
      ran = true;
    });
    await sleep(200);
    expect(ran).toBe(false);
    await limiter.incrementReservoir(1);
    await heavy;
    expect(await limiter.currentReservoir()).toBe(0);

    // Weight 0 takes nothing and is not held back by an empty reservoir, as in Bottleneck.
    expect(await limiter.schedule({ weight: 0 }, async () => 'ran')).toBe('ran');
    expect(await limiter.currentReservoir()).toBe(0);

    const free = await limiterOf({ id: 'no-reservoir' });
    await Promise.all([1, 2, 3].map(() => free.schedule(async () => undefined)));
    expect(await free.currentReservoir()).toBeNull();
  });
});
