/**
 * A scheduler in a process of its own, for test/scheduler/multiprocess.test.ts. Each line of
 * stdin is a JSON command on the Redis at argv[2]; each gets one JSON line back:
 *  - `run`: schedules `jobs` on `key` under `rules` (in order, one enqueue after another) and
 *    answers what each job saw when it started: its label, the epoch ms it started at, its place
 *    in the order of starts over every process (a Redis counter it bumps first), and the end of
 *    its grant's window (epoch ms).
 *  - `pause`: pauses `key` for `ms` and answers the pause's end (epoch ms).
 */
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createScheduler, type RuleOptions, redisStore } from '../../src/index.js';

interface WorkerJob {
  label: string;
  priority?: number;
  tenant?: string;
  /** How long the job runs (default 0). */
  holdMs?: number;
}

type Command =
  | { op: 'run'; prefix: string; key: string; rules: RuleOptions | RuleOptions[]; jobs: WorkerJob[] }
  | { op: 'pause'; prefix: string; key: string; ms: number };

export interface JobStart {
  label: string;
  startedAt: number;
  /** 1 for the first job of the prefix to start, over every process (milliseconds can tie). */
  turn: number;
  windowEnd: number;
}

const client = new Redis(Number(process.argv[2]), '127.0.0.1');
const answer = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

createInterface({ input: process.stdin }).on('line', async (line) => {
  const command = JSON.parse(line) as Command;
  const rules: RuleOptions = { algorithm: 'fixed-window', limit: 1000, window: '1m' };
  const scheduler = createScheduler({
    store: redisStore({ client }),
    prefix: command.prefix,
    rules: command.op === 'run' ? command.rules : rules,
    timeout: '2s',
  });
  if (command.op === 'pause') {
    await scheduler.pause(command.key, command.ms);
    await scheduler.close();
    answer(Date.now());
    return;
  }
  const starts = command.jobs.map(({ label, priority, tenant, holdMs = 0 }) =>
    scheduler.schedule(
      async (grant): Promise<JobStart> => {
        const startedAt = Date.now();
        const turn = await client.incr(`${command.prefix}:starts`);
        if (holdMs > 0) await sleep(holdMs);
        return { label, startedAt, turn, windowEnd: startedAt + grant.decision.resetMs };
      },
      { key: command.key, ...(priority === undefined ? {} : { priority }), ...(tenant ? { tenant } : {}) },
    ),
  );
  answer(await Promise.all(starts));
  await scheduler.close();
});
process.stdin.on('end', () => {
  client.disconnect();
});
answer('ready');
