/**
 * One Bottleneck job: its task, arguments and options, the promise its caller holds (settled by
 * the limiter, not by the scheduler, so a drop can reject it or, with `rejectOnDrop: false`,
 * leave it pending), and its run inside a scheduler grant: `expiration` per attempt, and a retry
 * after the delay a `failed` listener returns, keeping the job's slots as Bottleneck does.
 */
import { BottleneckError } from './errors.js';
import type { Events } from './events.js';
import type { JobOptions } from './settings.js';

export type Task = (...args: unknown[]) => unknown;

/** What runs a task: the task itself, or a chained limiter's `schedule`. */
export type Runner = (options: JobOptions, task: Task, args: unknown[]) => unknown;

export interface Job {
  readonly task: Task;
  readonly args: unknown[];
  readonly options: JobOptions;
  readonly promise: Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  retryCount: number;
  /** Takes it out of the scheduler's queue it waits in (a drop, or a move to new rules). */
  abort: AbortController;
}

export function createJob(
  task: Task,
  args: unknown[],
  options: JobOptions,
  PromiseClass: PromiseConstructor,
): Job {
  let resolve!: (value: unknown) => void;
  let reject!: (error: unknown) => void;
  const promise = new PromiseClass((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { task, args, options, promise, resolve, reject, retryCount: 0, abort: new AbortController() };
}

/** The job's attempts: `scheduled`, `executing`, then `done` or `failed` (and `retry` after a delay). */
export async function runAttempts(
  job: Job,
  events: Events,
  runner: Runner,
  firstWait: number,
  executing: () => void,
) {
  const { options, args } = job;
  let wait = firstWait;
  for (;;) {
    void events.trigger('scheduled', { args, options });
    // A timer even at 0 ms, as Bottleneck's: code written against it expects a turn of the event loop here.
    await sleep(wait);
    executing();
    const info = { args, options, retryCount: job.retryCount };
    void events.trigger('executing', info);
    try {
      const value = await attempt(job, runner);
      void events.trigger('done', info);
      return value;
    } catch (error) {
      const retry = await events.trigger('failed', error, info);
      if (retry == null) {
        void events.trigger('done', info);
        throw error;
      }
      // Bottleneck truncates the delay to an integer the same way.
      const after = ~~(retry as number);
      void events.trigger('retry', `Retrying ${options.id} after ${after} ms`, info);
      job.retryCount++;
      wait = after;
    }
  }
}

/** One run of the task, failed by `expiration` if it takes longer. */
async function attempt(job: Job, runner: Runner): Promise<unknown> {
  const run = (async () => runner(job.options, job.task, job.args))();
  const { expiration } = job.options;
  if (expiration === null) return run;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, fail) => {
    timer = setTimeout(
      () => fail(new BottleneckError(`This job timed out after ${expiration} ms.`)),
      expiration,
    );
  });
  try {
    return await Promise.race([run, expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((wake) => setTimeout(wake, ms));
}
