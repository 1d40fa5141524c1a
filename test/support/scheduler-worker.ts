/**
 * A scheduler in a process of its own, for test/scheduler/multiprocess.test.ts: on each line of
 * stdin (a JSON job) it schedules `jobs` jobs on the Redis at argv[2] and answers one JSON line
 * with the window each job's grant fell in (the end of its fixed window, from the decision).
 */
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { createScheduler, redisStore } from '../../src/index.js';

interface WorkerJob {
  prefix: string;
  key: string;
  jobs: number;
  limit: number;
  windowMs: number;
}

const client = new Redis(Number(process.argv[2]), '127.0.0.1');
createInterface({ input: process.stdin }).on('line', async (line) => {
  const job = JSON.parse(line) as WorkerJob;
  const scheduler = createScheduler({
    store: redisStore({ client }),
    prefix: job.prefix,
    rules: { algorithm: 'fixed-window', limit: job.limit, window: job.windowMs },
    timeout: '2s',
  });
  const windows = await Promise.all(
    Array.from({ length: job.jobs }, () =>
      scheduler.schedule((grant) => Math.round((Date.now() + grant.decision.resetMs) / job.windowMs), {
        key: job.key,
      }),
    ),
  );
  await scheduler.close();
  process.stdout.write(`${JSON.stringify(windows)}\n`);
});
process.stdin.on('end', () => {
  client.disconnect();
});
process.stdout.write('ready\n');
