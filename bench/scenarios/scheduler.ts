/**
 * Scheduling jobs that call a rate-limited upstream: Floodgate's scheduler beside p-queue and
 * Bottleneck. Two runs per contender:
 *  - saturated: workers keep jobs queued against an upstream whose hidden limit (fixed windows
 *    from its own start, src/cli/compare/hidden-limit.ts) equals the limit every scheduler is
 *    given; jobs/s, the upstream's 429s, and Redis calls per job (commands the clients sent,
 *    counted in the client, so a script's inner calls are not). Contenders with a shared store
 *    run as 4 simulated processes (one scheduler and one Redis client each), the others as one.
 *  - overhead: a limit no run reaches, no-op jobs, one process: jobs/s beside a bare
 *    `limiter.check` of the same rule on the memory store.
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { createHiddenLimit } from '../../src/cli/compare/hidden-limit.js';
import { type Job, SCHEDULER_CONTENDERS, type SchedulerContender } from '../peers/schedulers.js';
import type { Role } from '../peers/types.js';
import type { BenchContext } from '../support/context.js';
import { floodgate } from '../support/floodgate.js';

export type SchedulerWorkload = 'saturated' | 'overhead';

export interface SchedulerRow {
  contender: { name: string; role: Role };
  workload: SchedulerWorkload;
  processes: number;
  limit: number;
  windowMs: number;
  jobsPerSecond: number;
  /** Upstream answers 429 in the measured phase (saturated only). */
  upstream429: number;
  /** Commands the scheduler's Redis clients sent per job, or null off Redis. */
  redisCallsPerJob: number | null;
  /** Why the row could not run. */
  skipped?: string;
}

const PROCESSES = 4;
const WORKERS = 32;
const WINDOW_MS = 1000;

/** Counts every command any ioredis client in this process sends while `counting` is on. */
function commandCounter() {
  const prototype = Redis.prototype as unknown as { sendCommand: (...args: unknown[]) => unknown };
  const original = prototype.sendCommand;
  let sent = 0;
  prototype.sendCommand = function countedSendCommand(this: unknown, ...args: unknown[]) {
    sent += 1;
    return original.apply(this, args);
  };
  return {
    sent: () => sent,
    restore: () => {
      prototype.sendCommand = original;
    },
  };
}

async function saturated(contender: SchedulerContender, context: BenchContext): Promise<SchedulerRow> {
  const limit = context.settings.quick ? 50 : 200;
  const windows = context.settings.quick ? 2 : 4;
  const processes = contender.shared ? PROCESSES : 1;
  const prefix = `bench-scheduler-${process.pid}-${Date.now()}`;
  const setup = { limit, windowMs: WINDOW_MS, server: context.server, prefix, exact: true };
  const instances = await Promise.all(Array.from({ length: processes }, () => contender.create(setup)));
  const counter = commandCounter();
  const upstream = createHiddenLimit({
    requests: limit,
    tokens: Number.MAX_SAFE_INTEGER,
    windowMs: WINDOW_MS,
    dialect: 'openai',
    startMs: Date.now(),
  });
  const started = Date.now();
  const stopAt = started + windows * WINDOW_MS;
  let served = 0;
  let refused = 0;
  const job: Job = () => {
    const now = Date.now();
    const answer = upstream.answer(0, now);
    if (now < stopAt) {
      if (answer.status === 200) served += 1;
      else refused += 1;
    }
    return answer;
  };
  const before = counter.sent();
  let after = before;
  try {
    await Promise.all(
      Array.from({ length: WORKERS }, async (_, worker) => {
        const instance = instances[worker % processes] as (typeof instances)[number];
        while (Date.now() < stopAt) await instance.schedule(job);
      }),
    );
    after = counter.sent();
  } finally {
    counter.restore();
    await Promise.all(instances.map((instance) => instance.close()));
  }
  const jobs = served + refused;
  return {
    contender: { name: contender.name, role: contender.role },
    workload: 'saturated',
    processes,
    limit,
    windowMs: WINDOW_MS,
    jobsPerSecond: served / (windows * (WINDOW_MS / 1000)),
    upstream429: refused,
    redisCallsPerJob: contender.shared && jobs > 0 ? (after - before) / jobs : null,
  };
}

/** Runs `schedule` on no-op jobs for the bench's seconds, `WORKERS` at a time; jobs per second. */
async function throughput(schedule: () => Promise<unknown>, seconds: number): Promise<number> {
  const stopAt = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (performance.now() < stopAt) {
        await schedule();
        done += 1;
      }
    }),
  );
  return done / seconds;
}

const UNREACHED = 1_000_000_000;

async function overhead(contender: SchedulerContender, context: BenchContext): Promise<SchedulerRow> {
  const prefix = `bench-scheduler-overhead-${process.pid}`;
  const setup = { limit: UNREACHED, windowMs: WINDOW_MS, server: context.server, prefix, exact: false };
  const instance = await contender.create(setup);
  const job: Job = () => ({ status: 200, headers: {} });
  try {
    await throughput(() => instance.schedule(job), context.settings.warmupSeconds);
    const jobsPerSecond = await throughput(() => instance.schedule(job), context.settings.seconds);
    return row(contender, 'overhead', jobsPerSecond);
  } finally {
    await instance.close();
  }
}

function row(
  contender: Pick<SchedulerContender, 'name' | 'role'>,
  workload: SchedulerWorkload,
  jobsPerSecond: number,
) {
  return {
    contender: { name: contender.name, role: contender.role },
    workload,
    processes: 1,
    limit: UNREACHED,
    windowMs: WINDOW_MS,
    jobsPerSecond,
    upstream429: 0,
    redisCallsPerJob: null,
  };
}

async function bareCheck(context: BenchContext): Promise<SchedulerRow> {
  const limiter = floodgate.createLimiter({
    store: floodgate.memoryStore(),
    rules: { name: 'upstream', algorithm: 'fixed-window', limit: UNREACHED, window: WINDOW_MS },
  });
  await throughput(() => limiter.check('default'), context.settings.warmupSeconds);
  const jobsPerSecond = await throughput(() => limiter.check('default'), context.settings.seconds);
  await limiter.close();
  return row(
    { name: 'floodgate limiter.check (memory), no queue', role: 'ceiling' },
    'overhead',
    jobsPerSecond,
  );
}

export async function runScheduler(context: BenchContext): Promise<SchedulerRow[]> {
  const rows: SchedulerRow[] = [];
  for (const contender of SCHEDULER_CONTENDERS) {
    const skipped = await contender.unavailable?.();
    const runs = contender.shared ? (['saturated'] as const) : (['saturated', 'overhead'] as const);
    for (const workload of runs) {
      if (skipped !== undefined) {
        rows.push({ ...row(contender, workload, 0), skipped });
        continue;
      }
      try {
        const result =
          workload === 'saturated' ? await saturated(contender, context) : await overhead(contender, context);
        rows.push(result);
        context.log(
          `scheduler ${workload}: ${contender.name}: ${Math.round(result.jobsPerSecond)} jobs/s, ${result.upstream429} upstream 429s`,
        );
      } catch (error) {
        rows.push({
          ...row(contender, workload, 0),
          skipped: `fails: ${(error as Error).message.split('\n')[0]}`,
        });
        context.log(`scheduler ${workload}: ${contender.name}: ${(error as Error).message}`);
      }
    }
  }
  rows.push(await bareCheck(context));
  return rows;
}
