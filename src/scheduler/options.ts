/**
 * The scheduler's public types, and its options validated once: at construction for the
 * scheduler's own, per call for a job's (`schedule`, `wrap`, `fetch`).
 */
import type { Decision } from '../core/decision.js';
import { describe } from '../describe.js';
import { type Duration, parseDuration } from '../duration.js';
import type { LimiterOptions } from '../limiter.js';
import { checkOptions } from '../options.js';
import { positiveInteger } from '../rules.js';
import type { HeaderDialect, ResponseLike } from './upstream-headers.js';

export interface SchedulerOptions extends LimiterOptions {
  /** Most jobs waiting in this process; past it `schedule` rejects at once with `QueueFullError`. Default 10,000. */
  highWater?: number;
  /**
   * How to read the upstream's budget from a response: `'ietf'` (default), `'openai'`,
   * `'anthropic'`, `'github'`, a function `(response) => { remaining?, resetMs?, retryAfterMs?,
   * limit? } | undefined` (or such objects by budget name), or `false` (budgets not read; a 429 or
   * 503 with Retry-After still pauses the key).
   */
  headers?: HeaderDialect | ((response: ResponseLike) => unknown) | false;
}

export interface ScheduleOptions {
  /** The limiter key whose rules the job waits for. Default `'default'`. */
  key?: string;
  /** Within a key, tenants share turns in weighted fair order (by cost). Default: one shared tenant. */
  tenant?: string;
  /** 0 runs first, 9 last. Default 5. */
  priority?: number;
  /** Units the job takes from rules that count cost (e.g. tokens). Default 1. */
  cost?: number;
  /** Aborting it takes the job out of the queue: it rejects with the signal's reason and takes nothing. */
  signal?: AbortSignal;
  /** Longest wait for a turn (ms or a duration string); past it the job rejects with `WaitTimeoutError`. */
  maxWait?: Duration;
}

export interface SchedulerFetchOptions extends ScheduleOptions {
  /** Retries after a 429 answer, each after the key's shared pause. Default 2. */
  retries?: number;
}

/** What a running job is handed. */
export interface Grant {
  /** The limiter's decision that let the job run. */
  readonly decision: Decision;
  readonly key: string;
  readonly tenant: string | undefined;
  /** Charges the cost really used (e.g. the tokens a response reports) instead of the `cost` reserved. */
  settle(cost: number): Promise<void>;
  /** Learns from an upstream response (status and headers): a 429/503 pause, the budgets it reports. */
  observe(response: ResponseLike): void;
}

export interface SchedulerEvents {
  /** The key was paused (by `pause`, or by a response's Retry-After, in this process or another). */
  paused: [info: { key: string; until: number; source: 'response' | 'pause' }];
}

export interface Scheduler {
  /**
   * Runs `fn(grant)` once `key`'s rules allow `cost`, in priority then fair tenant order, and
   * resolves or rejects as it does.
   * @example
   * const answer = await scheduler.schedule((grant) => callModel(prompt), { key: 'openai', cost: 800 });
   */
  schedule<T>(fn: (grant: Grant) => T | PromiseLike<T>, options?: ScheduleOptions): Promise<Awaited<T>>;
  /**
   * A function whose calls are scheduled with `options` and run `fn` with the caller's arguments.
   * @example
   * const limitedGet = scheduler.wrap((url: string) => fetch(url), { key: 'github' });
   */
  wrap<A extends unknown[], T>(
    fn: (...args: A) => T | PromiseLike<T>,
    options?: ScheduleOptions,
  ): (...args: A) => Promise<Awaited<T>>;
  /** A scheduled `fetch` that learns from its response and retries a 429 (or another answer that paused the key, such as GitHub's rate-limit 403) after the shared pause. */
  fetch(
    input: string | URL | Request,
    init?: RequestInit,
    options?: SchedulerFetchOptions,
  ): Promise<Response>;
  /** Holds every job of `key`, on every process sharing the store, for at least `duration`. */
  pause(key: string, duration: Duration): Promise<void>;
  /** Jobs of this process waiting for a turn and running now. */
  counts(): { waiting: number; running: number };
  /** Rejects waiting jobs with `LimiterClosedError`, waits for running ones, then closes the limiter. */
  close(): Promise<void>;
  on<E extends keyof SchedulerEvents>(event: E, listener: (...args: SchedulerEvents[E]) => void): this;
  off<E extends keyof SchedulerEvents>(event: E, listener: (...args: SchedulerEvents[E]) => void): this;
}

/** A job's options as the scheduler uses them. */
export interface JobOptions {
  readonly key: string;
  readonly tenant: string | undefined;
  readonly priority: number;
  readonly cost: number;
  readonly signal: AbortSignal | undefined;
  readonly maxWaitMs: number | undefined;
}

const SCHEDULE_OPTIONS = new Set(['key', 'tenant', 'priority', 'cost', 'signal', 'maxWait']);
const FETCH_OPTIONS = new Set([...SCHEDULE_OPTIONS, 'retries']);

/** Validates a job's options (`schedule`, `wrap`); `fetch` also allows `retries`. */
export function resolveJobOptions(options: ScheduleOptions | undefined, withRetries = false): JobOptions {
  const given = options ?? {};
  checkOptions(given, {
    owner: 'schedule options',
    expected: withRetries
      ? '{ key?, tenant?, priority?, cost?, signal?, maxWait?, retries? }'
      : '{ key?, tenant?, priority?, cost?, signal?, maxWait? }',
    known: withRetries ? FETCH_OPTIONS : SCHEDULE_OPTIONS,
  });
  const { key = 'default', tenant, priority = 5, cost = 1, signal, maxWait } = given;
  if (typeof key !== 'string') throw new TypeError(`key: expected a string, got ${describe(key)}`);
  if (tenant !== undefined && typeof tenant !== 'string') {
    throw new TypeError(`tenant: expected a string, got ${describe(tenant)}`);
  }
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 0 || priority > 9) {
    throw new RangeError(`priority: ${describe(priority)} must be an integer from 0 to 9`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`signal: expected an AbortSignal, got ${describe(signal)}`);
  }
  return {
    key,
    tenant,
    priority,
    cost: positiveInteger(cost, 'cost', Number.MAX_SAFE_INTEGER),
    signal,
    maxWaitMs: maxWait === undefined ? undefined : parseDuration(maxWait, 'maxWait'),
  };
}

/** `retries` of `fetch`: 0 to 10, default 2. */
export function resolveRetries(retries: unknown): number {
  if (retries === undefined) return 2;
  if (typeof retries !== 'number' || !Number.isInteger(retries) || retries < 0 || retries > 10) {
    throw new RangeError(`retries: ${describe(retries)} must be an integer from 0 to 10`);
  }
  return retries;
}

/** `highWater`: an integer from 1 to 10,000,000, default 10,000. */
export function resolveHighWater(highWater: unknown): number {
  return positiveInteger(highWater ?? 10_000, 'highWater', 10_000_000);
}
