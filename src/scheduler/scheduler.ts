/**
 * createScheduler: a limiter's rules describe an upstream's limits, and jobs wait their turn for
 * them instead of being refused. The queue of each key is the store's (shared by every process on
 * Redis); driver.ts takes this process's jobs through it, this module runs them and learns from
 * their responses.
 */

import { keyHead } from '../base/key-encoding.js';
import type { Decision } from '../core/decision.js';
import { describe } from '../describe.js';
import { parseDuration } from '../duration.js';
import { createEmitter } from '../emitter.js';
import { LimiterClosedError, QueueFullError } from '../errors.js';
import { createLimiter, LIMITER_OPTIONS, type Limiter, type LimiterOptions } from '../limiter.js';
import { checkOptions } from '../options.js';
import type { GrantMark, QueueSkip } from '../stores/queue-types.js';
import { unref } from '../turns.js';
import { createDriver } from './driver.js';
import { createJob, type Job } from './jobs.js';
import { createObserver } from './observe.js';
import {
  type Grant,
  type JobOptions,
  resolveHighWater,
  resolveJobOptions,
  resolveRetries,
  type Scheduler,
  type SchedulerEvents,
  type SchedulerOptions,
} from './options.js';
import { type BudgetReader, budgetReader, type ResponseLike } from './upstream-headers.js';

const SCHEDULER_OPTIONS = new Set([...LIMITER_OPTIONS, 'highWater', 'headers']);
const DEFAULT_JOB_OPTIONS = resolveJobOptions(undefined);

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') &&
  value !== null &&
  typeof (value as { then?: unknown }).then === 'function';
/** The safety re-check for news lost on the way (a dropped pub/sub connection), and liveness renewal. */
const HEARTBEAT_MS = 1_000;

/**
 * Creates a scheduler: jobs run when the rules allow, in priority then fair tenant order, on one
 * process (memory store) or across every process sharing a Redis store.
 * @example
 * const scheduler = createScheduler({
 *   store: redisStore({ client: new Redis() }),
 *   rules: [
 *     { name: 'rpm', algorithm: 'sliding-window', limit: 500, window: '1m', counts: 'requests' },
 *     { name: 'tpm', algorithm: 'sliding-window', limit: 200_000, window: '1m' },
 *   ],
 *   headers: 'openai',
 * });
 * const answer = await scheduler.schedule(async (grant) => {
 *   const response = await callModel(prompt);
 *   await grant.settle(response.usage.total_tokens);
 *   return response;
 * }, { key: 'openai', cost: 1_000, tenant: customerId });
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  return createHookedScheduler(options, {}).scheduler;
}

/** What a layer built on the scheduler (floodgate/bottleneck) may add; not public API. */
export interface SchedulerHooks {
  /**
   * Asked before a head's check of its rules: false holds the head until `nudge(key)`; a promise
   * (a gate kept in the store) is awaited, and what it took goes back through `unadmit` when the
   * check denies the job, fails, or the job was given up meanwhile.
   */
  readonly admit?: (key: string, job: JobOptions) => boolean | Promise<boolean>;
  readonly unadmit?: (key: string, job: JobOptions) => void;
}

/** A scheduler, the limiter it runs jobs through, and `nudge` for its `admit` hook. */
export interface HookedScheduler {
  readonly scheduler: Scheduler;
  readonly limiter: Limiter;
  /** The head of `key` asks `admit` again. */
  nudge(key: string): void;
}

/** createScheduler with hooks for a layer built on it. */
export function createHookedScheduler(options: SchedulerOptions, hooks: SchedulerHooks): HookedScheduler {
  checkOptions(options, {
    owner: 'createScheduler',
    expected: 'an options object with rules',
    known: SCHEDULER_OPTIONS,
  });
  const { highWater, headers, ...limiterOptions } = options;
  const maxWaiting = resolveHighWater(highWater);
  const reader = budgetReader(headers);
  const limiter = createLimiter(limiterOptions as LimiterOptions);
  const open = limiter.store.queues;
  if (typeof open !== 'function') {
    throw new TypeError(
      `store: a '${limiter.store.kind}' store cannot back a scheduler (it has no queues); use memoryStore() or redisStore({ client })`,
    );
  }
  const holdsSlots = limiter.rules.some((rule) => rule.algorithm === 'concurrency');
  const emitter = createEmitter<SchedulerEvents>();
  const queues = open(limiter.prefix, (news) => driver.news(news));
  const observer = createObserver({
    reader: reader ?? (budgetReader('ietf') as BudgetReader),
    budgets: reader !== undefined,
    pause: pauseKey,
    learn: (key, budgets) => queues.learn(keyHead(limiter.prefix, key), budgets),
  });
  const driver = createDriver({
    limiter,
    queues,
    start,
    paused: (key, until, source) =>
      emitter.emit('paused', { key, until, source: source as 'response' | 'pause' }),
    admit: hooks.admit,
    unadmit: hooks.unadmit,
  });
  // The memory store's queues lose no news and have no liveness to renew.
  const heartbeat = limiter.store.local === true ? undefined : setInterval(driver.heartbeat, HEARTBEAT_MS);
  if (heartbeat !== undefined) unref(heartbeat);
  let running = 0;
  // Jobs between a check that skipped the queue and its answer: close() waits for them too.
  let starting = 0;
  // Responses jobs returned that paused their key: scheduler.fetch retries them after the pause.
  const pausing = new WeakSet<Response>();
  let closing: Promise<void> | undefined;
  let whenIdle: (() => void) | undefined;
  // The last key's head, so a stream of jobs on one key encodes it once.
  let lastKey = '';
  let lastHead = keyHead(limiter.prefix, '');

  function headOf(key: string): string {
    if (key !== lastKey) {
      lastKey = key;
      lastHead = keyHead(limiter.prefix, key);
    }
    return lastHead;
  }

  async function pauseKey(key: string, ms: number, source: 'response' | 'pause'): Promise<void> {
    const until = await queues.pause(keyHead(limiter.prefix, key), ms, source);
    emitter.emit('paused', { key, until, source });
  }

  /** One class for every grant: its methods are shared, not closures made per job. */
  class JobGrant implements Grant {
    constructor(
      readonly decision: Decision,
      readonly key: string,
      readonly tenant: string | undefined,
      private readonly mark: GrantMark | Promise<GrantMark>,
    ) {}
    settle(cost: number): Promise<void> {
      return limiter.settle(this.decision, cost);
    }
    observe(response: ResponseLike): void {
      observer.observe(this.key, response, this.mark);
    }
  }

  /** Runs an allowed job: resolves with what `fn` resolves with, once its slots are given back. */
  async function run(
    fn: (grant: Grant) => unknown,
    options: JobOptions,
    decision: Decision,
    mark: GrantMark | Promise<GrantMark>,
  ): Promise<unknown> {
    running++;
    try {
      let result = fn(new JobGrant(decision, options.key, options.tenant, mark));
      // A job that answers at once is not awaited: one tick less per job.
      if (isThenable(result)) result = await result;
      if (typeof Response === 'function' && result instanceof Response) {
        if (observer.observeQuietly(options.key, result, mark)) pausing.add(result);
      }
      return result;
    } finally {
      if (holdsSlots) {
        await limiter.release(decision).catch(() => undefined);
        if (driver.queued(options.key) > 0) queues.wake(headOf(options.key)).catch(() => undefined);
      }
      running--;
      idleNow();
    }
  }

  function idleNow(): void {
    if (running === 0 && starting === 0) whenIdle?.();
  }

  function start(job: Job, decision: Decision, mark: Promise<GrantMark>, done: () => void): void {
    run(job.fn, job.options, decision, mark).finally(done).then(job.resolve, job.reject);
  }

  /** A job queued to wait its turn. */
  function queued(fn: (grant: Grant) => unknown, options: JobOptions): Promise<unknown> {
    if (driver.waiting() >= maxWaiting) return Promise.reject(new QueueFullError(maxWaiting));
    return new Promise((resolve, reject) => {
      driver.submit(createJob(fn, options, resolve, reject, driver.giveUp));
    });
  }

  /** A job on a key nothing waits on or holds (in-process queues): checked at once, queued only if denied. */
  async function skipQueue(
    fn: (grant: Grant) => unknown,
    options: JobOptions,
    skip: QueueSkip,
    head: string,
  ): Promise<unknown> {
    starting++;
    let decision: Decision;
    try {
      // Without options when it can: a check of cost 1 then validates nothing.
      decision = await (options.cost === 1
        ? limiter.check(options.key)
        : limiter.check(options.key, { cost: options.cost }));
    } finally {
      starting--;
    }
    if (options.signal?.aborted === true) {
      // Aborted while its check was on its way: what the check took goes back.
      if (decision.allowed) {
        await limiter
          .refund(decision)
          .then(() => limiter.release(decision))
          .catch(() => undefined);
      }
      idleNow();
      throw options.signal.reason;
    }
    if (!decision.allowed) {
      idleNow();
      if (closing !== undefined) throw new LimiterClosedError('schedule');
      return queued(fn, options);
    }
    return run(fn, options, decision, skip.granted(head, options.cost));
  }

  const scheduler: Scheduler = {
    schedule: function schedule<T>(fn: (grant: Grant) => T | PromiseLike<T>, scheduleOptions?: object) {
      if (typeof fn !== 'function') {
        return Promise.reject(new TypeError(`schedule: expected a function, got ${describe(fn)}`));
      }
      let jobOptions: JobOptions;
      try {
        jobOptions = scheduleOptions === undefined ? DEFAULT_JOB_OPTIONS : resolveJobOptions(scheduleOptions);
      } catch (error) {
        return Promise.reject(error);
      }
      if (closing !== undefined) return Promise.reject(new LimiterClosedError('schedule'));
      const { signal } = jobOptions;
      if (signal?.aborted === true) return Promise.reject(signal.reason);
      const head = headOf(jobOptions.key);
      // An admit gate (floodgate/bottleneck's reservoir) is asked only at the head of the queue.
      const skip = hooks.admit === undefined ? queues.skip : undefined;
      if (skip?.idle(head, jobOptions.cost) === true) {
        return skipQueue(fn, jobOptions, skip, head) as Promise<Awaited<T>>;
      }
      return queued(fn, jobOptions) as Promise<Awaited<T>>;
    },
    wrap(fn, wrapOptions) {
      resolveJobOptions(wrapOptions);
      if (typeof fn !== 'function') throw new TypeError(`wrap: expected a function, got ${describe(fn)}`);
      return function scheduled(...args) {
        return scheduler.schedule(() => fn(...args), wrapOptions);
      };
    },
    async fetch(input, init, fetchOptions) {
      resolveJobOptions(fetchOptions, true);
      const { retries, ...scheduleOptions } = fetchOptions ?? {};
      const attempts = resolveRetries(retries) + 1;
      for (let attempt = 1; ; attempt++) {
        // A Request's body can be read once: each attempt sends a copy.
        const request = input instanceof Request ? input.clone() : input;
        const response = await scheduler.schedule(() => fetch(request, init), scheduleOptions);
        if (!(response.status === 429 || pausing.has(response)) || attempt >= attempts) return response;
        // Its pause (if it gave one) is already the key's: the next attempt waits it out.
        await response.body?.cancel().catch(() => undefined);
      }
    },
    async pause(key, duration) {
      if (typeof key !== 'string') throw new TypeError(`key: expected a string, got ${describe(key)}`);
      const ms = parseDuration(duration, 'duration');
      if (closing !== undefined) throw new LimiterClosedError('pause');
      await pauseKey(key, ms, 'pause');
    },
    counts: () => ({ waiting: driver.waiting(), running }),
    close() {
      if (closing !== undefined) return closing;
      clearInterval(heartbeat);
      driver.rejectAll(new LimiterClosedError('schedule'));
      closing = (async () => {
        if (running > 0 || starting > 0) await new Promise<void>((resolve) => (whenIdle = resolve));
        await queues.close().catch(() => undefined);
        await limiter.close();
      })();
      return closing;
    },
    on(event, listener) {
      emitter.on(event, listener);
      return this;
    },
    off(event, listener) {
      emitter.off(event, listener);
      return this;
    },
  };
  return { scheduler, limiter, nudge: driver.nudge };
}
