/**
 * Clustering as Bottleneck documents it: limiters with the same `id` on one Redis share their
 * limits, here across 3 OS processes on a throwaway Redis — at most maxConcurrent jobs run at
 * once over all of them, starts are minTime apart over all of them, and one reservoir feeds them all.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import Bottleneck from '../../src/bottleneck/index.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { ask, useWorkerProcesses } from '../support/worker-processes.js';

const WORKER = fileURLToPath(new URL('../support/bottleneck-worker.ts', import.meta.url));
const PROCESSES = 3;

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});

const workers = useWorkerProcesses(WORKER, PROCESSES, () => [String(server.port)]);

/** Every process runs `jobs` jobs on the same id; answers all their [grant, start, end]. */
async function runEverywhere(order: object): Promise<[number, number, number][]> {
  const answers = await Promise.all(workers.map((worker) => ask<[number, number, number][]>(worker, order)));
  return answers.flat();
}

describe('limiters with the same id in 3 processes on one Redis', () => {
  it('run at most maxConcurrent jobs at once over all the processes', async () => {
    const runs = await runEverywhere({
      id: 'shared-slots',
      jobs: 4,
      maxConcurrent: 2,
      minTime: 0,
      jobMs: 60,
    });
    expect(runs).toHaveLength(12);
    // At each start, the jobs already started and not yet ended, itself included.
    const most = Math.max(
      ...runs.map(([, start]) => runs.filter(([, s, e]) => s <= start && e > start).length),
    );
    expect(most).toBe(2);
  }, 30_000);

  it('space starts minTime apart over all the processes', async () => {
    const runs = await runEverywhere({
      id: 'shared-spacing',
      jobs: 3,
      maxConcurrent: 5,
      minTime: 80,
      jobMs: 1,
    });
    const grants = runs.map(([grant]) => grant).sort((a, b) => a - b);
    const gaps = grants.slice(1).map((grant, i) => grant - (grants[i] as number));
    // Redis spaces the grants exactly; each process learns of its own a reply's latency later,
    // which varies by a few ms on a loaded machine: the bound allows 10 ms of that, and the
    // whole run cannot be shorter than 8 gaps.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(70);
    expect((grants.at(-1) as number) - (grants[0] as number)).toBeGreaterThanOrEqual(8 * 80 - 10);
  }, 30_000);
});

describe('a reservoir shared by the limiters of one id in 3 processes', () => {
  it('grants at most the reservoir between refreshes over all the processes', async () => {
    const runs = await runEverywhere({
      id: 'shared-reservoir',
      jobs: 4,
      maxConcurrent: 20,
      minTime: 0,
      jobMs: 1,
      reservoir: { reservoir: 4, reservoirRefreshInterval: 500, reservoirRefreshAmount: 4 },
    });
    expect(runs).toHaveLength(12);
    const grants = runs.map(([grant]) => grant).sort((a, b) => a - b);
    // Three refills of 4 (the first limiter's, then two refreshes): each group of 4 at least a
    // refresh after the one before, less what the processes' own timers may lag.
    expect((grants[4] as number) - (grants[0] as number)).toBeGreaterThanOrEqual(400);
    expect((grants[8] as number) - (grants[4] as number)).toBeGreaterThanOrEqual(400);
  }, 30_000);
});

describe('one connection shared by limiters in a process', () => {
  it("a limiter's connection passed to another: same id, same limits; the lender owns the client", async () => {
    const options = { id: 'lent', maxConcurrent: 1 };
    const lender = new Bottleneck({
      ...options,
      datastore: 'ioredis',
      clientOptions: { host: '127.0.0.1', port: server.port },
    });
    const borrower = new Bottleneck({ ...options, connection: lender.connection });
    expect(borrower.connection).toBe(lender.connection);
    expect(borrower.datastore).toBe('ioredis');
    await Promise.all([lender.ready(), borrower.ready()]);
    let running = 0;
    let most = 0;
    const job = async () => {
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 30));
      running--;
    };
    await Promise.all([
      lender.schedule(job),
      borrower.schedule(job),
      lender.schedule(job),
      borrower.schedule(job),
    ]);
    expect(most).toBe(1);
    await borrower.disconnect();
    // The borrower left the client open: the lender still runs jobs.
    expect(await lender.schedule(async () => 'still open')).toBe('still open');
    await lender.disconnect();
    expect(new Bottleneck().connection).toBeNull();
  }, 30_000);
});
