/**
 * Four OS processes schedule jobs on one key of one real Redis (issue 37's cross-process targets):
 * exactness (the grants in every window of the rule at most its limit, every window used in full
 * while work waits), priority (lower first, FIFO within a priority, whichever process queued),
 * fairness (a tenant with many jobs queued delays another's one job by at most one turn) and a
 * pause set in one process holding the others.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createScheduler, type RuleOptions, redisStore } from '../../src/index.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import type { JobStart } from '../support/scheduler-worker.js';
import { ask, useWorkerProcesses, type WorkerProcess } from '../support/worker-processes.js';

const WORKER = fileURLToPath(new URL('../support/scheduler-worker.ts', import.meta.url));
const PROCESSES = 4;

let server: RedisServer;
let client: Redis;
useRedisServer((started) => {
  ({ server, client } = started);
});

const workers = useWorkerProcesses(WORKER, PROCESSES, () => [String(server.port)]);

let prefixes = 0;

/** Entries in the key's shared queue, every process's. */
const queued = (prefix: string, key: string) => client.zcard(`${prefix}:{${key}}:~q`);

async function untilQueued(prefix: string, key: string, entries: number): Promise<void> {
  while ((await queued(prefix, key)) < entries) await sleep(5);
}

/**
 * Start order (one at a time under a concurrency of 1), by the count each job took first thing:
 * jobs of one slot start a fraction of a millisecond apart, so their epoch ms can tie.
 */
const order = (starts: JobStart[][]) =>
  starts
    .flat()
    .sort((a, b) => a.turn - b.turn)
    .map((start) => start.label);

const ONE_AT_A_TIME: RuleOptions = { algorithm: 'concurrency', limit: 1, lease: '1m' };

/**
 * Holds the key's only slot from this process (a fifth participant) until the returned function
 * is called, so the workers' jobs queue behind it however long the machine takes to queue them.
 */
async function holdKey(prefix: string, key: string): Promise<() => Promise<void>> {
  const scheduler = createScheduler({ store: redisStore({ client }), prefix, rules: ONE_AT_A_TIME });
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const held = scheduler.schedule(() => gate, { key });
  while (scheduler.counts().running === 0) await sleep(5);
  return async () => {
    open();
    await held;
    await scheduler.close();
  };
}

describe('schedulers in 4 processes on one Redis', () => {
  it('grant at most the limit in every window, and use every window in full while work waits', async () => {
    const prefix = `mp${prefixes++}`;
    const rules: RuleOptions = { algorithm: 'fixed-window', limit: 10, window: 500 };
    const jobs = Array.from({ length: 15 }, (_, index) => ({ label: String(index) }));
    const starts = await Promise.all(
      workers.map((worker) => ask<JobStart[]>(worker, { op: 'run', prefix, key: 'k', rules, jobs })),
    );
    const perWindow = new Map<number, number>();
    for (const { windowEnd } of starts.flat()) {
      const window = Math.round(windowEnd / 500);
      perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    }
    const windows = [...perWindow.keys()].sort((a, b) => a - b);
    const counts = windows.map((window) => perWindow.get(window) as number);
    // 60 jobs, 10 a window, in consecutive windows: the first may be under way when the
    // processes start, the last gets what is left; every one between is full.
    expect(Math.max(...counts)).toBe(10);
    expect(counts.slice(1, -1).every((count) => count === 10)).toBe(true);
    expect((windows.at(-1) as number) - (windows[0] as number)).toBe(windows.length - 1);
    expect(windows.length).toBeLessThanOrEqual(7);
  });

  it('start lower priorities first, and FIFO within a priority across the processes', async () => {
    const prefix = `mp${prefixes++}`;
    const release = await holdKey(prefix, 'p');
    const plan = [
      [
        { label: 'a5', priority: 5 },
        { label: 'a1', priority: 1 },
      ],
      [
        { label: 'b5', priority: 5 },
        { label: 'b9', priority: 9 },
      ],
      [
        { label: 'c1', priority: 1 },
        { label: 'c5', priority: 5 },
      ],
      [
        { label: 'd0', priority: 0 },
        { label: 'd9', priority: 9 },
      ],
    ];
    const runs: Promise<JobStart[]>[] = [];
    let entries = 0;
    for (const [index, jobs] of plan.entries()) {
      runs.push(
        ask(workers[index] as WorkerProcess, { op: 'run', prefix, key: 'p', rules: ONE_AT_A_TIME, jobs }),
      );
      entries += jobs.length;
      await untilQueued(prefix, 'p', entries);
    }
    await release();
    expect(order(await Promise.all(runs))).toEqual(['d0', 'a1', 'c1', 'a5', 'b5', 'c5', 'b9', 'd9']);
  });

  it("let a tenant with 1,000 jobs queued delay another tenant's one job by at most one turn", async () => {
    const prefix = `mp${prefixes++}`;
    const heavy = Array.from({ length: 1000 }, (_, index) => ({ label: `heavy${index}`, tenant: 'heavy' }));
    const release = await holdKey(prefix, 'f');
    const many = ask<JobStart[]>(workers[1] as WorkerProcess, {
      op: 'run',
      prefix,
      key: 'f',
      rules: ONE_AT_A_TIME,
      jobs: heavy,
    });
    await untilQueued(prefix, 'f', 1000);
    const one = ask<JobStart[]>(workers[2] as WorkerProcess, {
      op: 'run',
      prefix,
      key: 'f',
      rules: ONE_AT_A_TIME,
      jobs: [{ label: 'light', tenant: 'light' }],
    });
    await untilQueued(prefix, 'f', 1001);
    await release();
    const started = order(await Promise.all([many, one]));
    // Both tenants' first jobs start at virtual time 0: the heavy one, queued first, then the light one.
    expect(started.indexOf('light')).toBe(1);
  }, 20_000);

  it('hold every process within 250 ms of a pause set in one, and wake their jobs one turn at a time', async () => {
    const prefix = `mp${prefixes++}`;
    const rules: RuleOptions = { algorithm: 'fixed-window', limit: 1000, window: '1m' };
    const jobs = Array.from({ length: 100 }, (_, index) => ({ label: String(index), holdMs: 20 }));
    // Three processes stream jobs on the key (and so hear its news); the fourth pauses it.
    const streams = workers
      .slice(1)
      .map((worker) => ask<JobStart[]>(worker, { op: 'run', prefix, key: 'z', rules, jobs }));
    while ((await client.keys(`${prefix}:*`)).length === 0) await sleep(5);
    await sleep(50);
    const pausedAt = Date.now();
    const until = await ask<number>(workers[0] as WorkerProcess, { op: 'pause', prefix, key: 'z', ms: 600 });
    const starts = (await Promise.all(streams)).flat().map((start) => start.startedAt);
    const during = starts.filter((at) => at > pausedAt + 250 && at < until);
    expect(during).toEqual([]);
    const after = starts.filter((at) => at >= until).sort((a, b) => a - b);
    expect(after.length).toBeGreaterThan(0);
    // Not all at once: the first jobs after the pause start at different moments.
    expect(new Set(after.slice(0, 5)).size).toBeGreaterThan(1);
  });
});
