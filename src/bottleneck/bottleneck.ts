/**
 * The Bottleneck class: Bottleneck 2's API over one Floodgate scheduler. The scheduler's queue
 * decides who runs next (priority, then first in first out) and its rules hold maxConcurrent and
 * minTime, on the memory store or on Redis (shared by every limiter with the same `id`); this
 * class keeps what is Bottleneck's own: job ids and states, its events, highWater's strategies,
 * the reservoir, retries and expiration.
 */
import { createHookedScheduler, type HookedScheduler } from '../scheduler/scheduler.js';
import { Batcher } from './batcher.js';
import { type Connection, openConnection, RedisConnection } from './connection.js';
import { BottleneckError } from './errors.js';
import { type Emitting, Events } from './events.js';
import { Group, useLimiterClass } from './group.js';
import { createJob, type Job, type Runner, runAttempts, sleep, type Task } from './job.js';
import { createReservoir, type Reservoir } from './reservoir.js';
import {
  type JobOptions,
  type LimitSettings,
  limitRules,
  mergeLimits,
  NO_ID,
  penaltyOf,
  resolveJobOptions,
  resolveLimits,
  STRATEGY,
} from './settings.js';
import { createSharedReservoir } from './shared-reservoir.js';
import { States, type Status } from './states.js';

const V1_MESSAGE =
  "Bottleneck v2 takes a single object argument. Refer to https://github.com/SGrondin/bottleneck#upgrading-to-v2 if you're upgrading from Bottleneck v1.";
const DROPPED = 'This job has been dropped by Bottleneck';
/** What a job dropped while waiting out minTime ends its grant with (never seen by callers). */
const DROPPED_RUNNING = new BottleneckError('dropped before it ran');
/** The store prefix of every limiter's keys (its queue, rules and reservoir, under its id). */
const PREFIX = 'bottleneck';
/** Longest a job holds its slots on a store nobody releases it from (a process that died). */
const LEASE_MS = 60 * 60 * 1000;

export interface StopOptions {
  enqueueErrorMessage?: string;
  dropWaitingJobs?: boolean;
  dropErrorMessage?: string;
}

export interface Bottleneck extends Emitting {}

/**
 * Bottleneck 2's limiter, on Floodgate's scheduler: change the import, keep the code.
 * @example
 * import Bottleneck from 'floodgate/bottleneck';
 * const limiter = new Bottleneck({ maxConcurrent: 2, minTime: 100 });
 * const user = await limiter.schedule(() => fetchUser(42));
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: Events installs on/once/removeAllListeners.
export class Bottleneck {
  readonly Events: Events;
  id: string;
  datastore: string;
  rejectOnDrop: boolean;
  trackDoneStatus: boolean;
  Promise: PromiseConstructor;
  private limits: LimitSettings;
  private readonly home: Connection;
  /** A connection given in the options (a Group's): its owner closes it. */
  private readonly sharedConnection: boolean;
  private readonly readied: Promise<unknown>;
  private hooked: HookedScheduler;
  private readonly reservoir: Reservoir;
  private readonly states: States;
  private submitting: Promise<unknown> = Promise.resolve();
  private receiving = 0;
  private runningWeight = 0;
  private doneWeight = 0;
  private chained: Bottleneck | null = null;
  private stopped: Required<StopOptions> | undefined;
  private unblockAt = 0;
  /** Locally, when the next job may start (minTime after the last start). */
  private nextStart = 0;
  private lastActive = Date.now();
  private readonly onSettled = new Set<() => void>();
  /** Each queued job's weight, by the abort signal the scheduler's job carries. */
  private readonly weights = new WeakMap<AbortSignal, number>();
  /** Jobs granted and waiting out minTime (RUNNING): `stop` drops them too. */
  private readonly spacing = new Set<Job>();

  constructor(options: Record<string, unknown> = {}, ...invalid: unknown[]) {
    if (options == null || typeof options !== 'object' || invalid.length > 0) {
      throw new BottleneckError(V1_MESSAGE);
    }
    this.id = String(options.id ?? NO_ID);
    this.datastore = String(options.datastore ?? 'local');
    this.rejectOnDrop = options.rejectOnDrop !== false;
    this.trackDoneStatus = options.trackDoneStatus === true;
    this.Promise = (options.Promise as PromiseConstructor | undefined) ?? Promise;
    if (!['local', 'redis', 'ioredis'].includes(this.datastore)) {
      throw new BottleneckError(`Invalid datastore type: ${this.datastore}`);
    }
    this.limits = resolveLimits(options);
    this.Events = new Events(this);
    this.states = new States(this.trackDoneStatus);
    const { connection, shared } = openConnection(options);
    this.home = connection;
    if (connection instanceof RedisConnection) this.datastore = connection.datastore;
    this.sharedConnection = shared;
    this.hooked = this.openScheduler();
    const { limiter } = this.hooked;
    this.readied = connection.ready.then(async (clients) => {
      if (options.clearDatastore === true) await limiter.reset(this.id);
      return clients;
    });
    const opened = () => this.hooked.nudge(this.id);
    const { reservoirs } = connection.store;
    this.reservoir =
      connection.local || reservoirs === undefined
        ? createReservoir(this.limits, opened)
        : createSharedReservoir({
            reservoirs,
            prefix: PREFIX,
            id: () => this.id,
            limits: this.limits,
            clear: options.clearDatastore === true,
            opened,
          });
  }

  static readonly strategy = STRATEGY;
  static readonly BottleneckError = BottleneckError;
  static readonly Events = Events;
  static readonly version = '2.19.5';
  static readonly Group = Group;
  static readonly Batcher = Batcher;
  static readonly RedisConnection = RedisConnection;
  static readonly IORedisConnection = RedisConnection;
  static default: typeof Bottleneck;
  readonly strategy = STRATEGY;
  readonly BottleneckError = BottleneckError;
  readonly version = '2.19.5';
  readonly Group = Group;
  readonly Batcher = Batcher;
  readonly RedisConnection = RedisConnection;
  readonly IORedisConnection = RedisConnection;

  /** A scheduler for the current limits, on the connection's store (rule state is shared by name). */
  private openScheduler(): HookedScheduler {
    return createHookedScheduler(
      {
        store: this.home.store,
        prefix: PREFIX,
        rules: limitRules(this.limits, LEASE_MS, !this.home.local),
        highWater: 10_000_000,
        headers: false,
      },
      {
        admit: (_key, job) => this.reservoir.admit(this.weightOf(job)),
        unadmit: (_key, job) => this.reservoir.unadmit(this.weightOf(job)),
      },
    );
  }

  /** Runs `task(...args)` when the limits allow; resolves or rejects as it does. */
  schedule<R>(...given: unknown[]): Promise<R> {
    const [options, task, args] =
      typeof given[0] === 'function'
        ? [{}, given[0] as Task, given.slice(1)]
        : [given[0], given[1] as Task, given.slice(2)];
    let jobOptions: JobOptions;
    try {
      jobOptions = resolveJobOptions(options);
    } catch (error) {
      return this.Promise.reject(error);
    }
    const job = createJob(task, args, jobOptions, this.Promise);
    this.receive(job);
    return job.promise as Promise<R>;
  }

  /** Bottleneck's callback form: `submit([options,] fn, ...args, callback)`; fn takes a node-style callback. */
  submit(...given: unknown[]): unknown {
    const withOptions = typeof given[0] !== 'function';
    const options = withOptions ? given[0] : {};
    const fn = (withOptions ? given[1] : given[0]) as Task;
    const rest = given.slice(withOptions ? 2 : 1);
    const callback = rest.pop() as ((...results: unknown[]) => void) | undefined;
    const task: Task = (...args) =>
      new this.Promise((resolve, reject) =>
        fn(...args, (...results: unknown[]) => (results[0] != null ? reject : resolve)(results)),
      );
    const job = createJob(task, rest, resolveJobOptions(options), this.Promise);
    job.promise.then(
      (results) => (typeof callback === 'function' ? callback(...(results as unknown[])) : undefined),
      (error) => {
        if (typeof callback !== 'function') return;
        if (Array.isArray(error)) callback(...error);
        else callback(error);
      },
    );
    return this.receive(job);
  }

  /** A function whose calls are scheduled; `.withOptions(options, ...args)` gives job options. */
  wrap<A extends unknown[], R>(fn: (...args: A) => R) {
    const schedule = this.schedule.bind(this);
    const wrapped = function wrapped(this: unknown, ...args: A) {
      return schedule<Awaited<R>>(fn.bind(this) as Task, ...args);
    };
    wrapped.withOptions = (options: Record<string, unknown>, ...args: A) =>
      schedule<Awaited<R>>(options, fn as Task, ...args);
    return wrapped;
  }

  chain(limiter: Bottleneck | null): this {
    this.chained = limiter;
    return this;
  }

  async updateSettings(options: Record<string, unknown> = {}): Promise<this> {
    const before = this.limits;
    const next = mergeLimits(before, options);
    this.limits = next;
    const shared = !this.home.local;
    if (next.maxConcurrent !== before.maxConcurrent || (shared && next.minTime !== before.minTime))
      this.moveTo();
    if (options.rejectOnDrop !== undefined) this.rejectOnDrop = options.rejectOnDrop !== false;
    // A new id is a new key: jobs from now on share limits with the limiters of that id.
    if (options.id != null) this.id = options.id as string;
    await this.reservoir.configure(next, options);
    return this;
  }

  /**
   * New rules: a new scheduler on the same store, where rule state is kept by rule name, so the
   * slots of running jobs count against the new maxConcurrent. Waiting jobs move to it in order;
   * the old one closes once its running jobs end.
   */
  private moveTo(): void {
    const old = this.hooked;
    this.hooked = this.openScheduler();
    for (const job of this.states.allQueued()) {
      job.abort.abort(new BottleneckError('moved to new settings'));
      job.abort = new AbortController();
      this.enqueue(job);
    }
    void old.scheduler.close();
  }

  async currentReservoir(): Promise<number | null> {
    return this.reservoir.current();
  }

  async incrementReservoir(amount = 0): Promise<number | null> {
    return this.reservoir.increment(amount);
  }

  /** Would a job of `weight` start now? */
  async check(weight = 1): Promise<boolean> {
    if (!(await this.reservoir.fits(weight)) || (this.home.local && this.nextStart > Date.now()))
      return false;
    const decision = await this.hooked.limiter.peek(this.id, { cost: Math.max(1, weight) });
    return decision.allowed;
  }

  queued(priority?: number): number {
    return this.states.queued(priority);
  }

  async clusterQueued(): Promise<number> {
    return this.queued();
  }

  empty(): boolean {
    return this.queued() === 0 && this.receiving === 0;
  }

  async running(): Promise<number> {
    return this.runningWeight;
  }

  async done(): Promise<number> {
    return this.doneWeight;
  }

  jobStatus(id: string): Status | null {
    return this.states.of(id);
  }

  jobs(status?: Status): string[] {
    return this.states.ids(status);
  }

  counts(): Record<string, number> {
    return this.states.counts();
  }

  /** The Redis connection (pass it as `connection` to share it), or null for a local limiter. */
  get connection(): RedisConnection | null {
    return this.home instanceof RedisConnection ? this.home : null;
  }

  ready(): Promise<unknown> {
    return this.readied;
  }

  clients(): Record<string, unknown> {
    return this.home.clients;
  }

  async publish(message: unknown): Promise<void> {
    await this.Events.trigger('message', String(message));
  }

  /** Stops timers and, when this limiter made its own Redis connection, closes it. */
  async disconnect(flush = true): Promise<void> {
    this.reservoir.stop();
    if (this.home.local) return;
    await this.hooked.scheduler.close();
    if (!this.sharedConnection) await this.home.disconnect(flush);
  }

  /** Refuses new jobs; drops waiting ones (unless `dropWaitingJobs: false`); resolves once running ones end. */
  stop(options: StopOptions = {}): Promise<void> {
    if (this.stopped !== undefined) {
      return this.Promise.reject(new BottleneckError('stop() has already been called'));
    }
    const stop = {
      enqueueErrorMessage:
        options.enqueueErrorMessage ?? 'This limiter has been stopped and cannot accept new jobs.',
      dropWaitingJobs: options.dropWaitingJobs ?? true,
      dropErrorMessage: options.dropErrorMessage ?? 'This limiter has been stopped.',
    };
    if (!stop.dropWaitingJobs) {
      // As Bottleneck: a last job, after every other, that ends when it is the only one left.
      const last = this.schedule({ priority: 9, weight: 0 }, () => this.whenSettled(1));
      this.stopped = stop;
      return last.then(() => undefined);
    }
    this.stopped = stop;
    return this.submitting.then(() => {
      for (const job of [...this.states.allQueued(), ...this.spacing]) this.drop(job, stop.dropErrorMessage);
      return this.whenSettled(0);
    });
  }

  /** When a job last arrived or finished (a Group deletes limiters idle past its timeout). */
  idleSince(): number {
    return this.runningWeight > 0 || !this.empty() ? Date.now() : this.lastActive;
  }

  /** Resolves once at most `left` jobs are unfinished. */
  private whenSettled(left: number): Promise<void> {
    return new this.Promise<void>((resolve) => {
      const check = () => {
        if (this.states.unfinished() > left) return;
        this.onSettled.delete(check);
        resolve();
      };
      this.onSettled.add(check);
      check();
    });
  }

  private receive(job: Job): unknown {
    const { id } = job.options;
    if (this.stopped !== undefined) {
      job.reject(new BottleneckError(this.stopped.enqueueErrorMessage));
      return false;
    }
    if (this.states.has(id)) {
      job.reject(new BottleneckError(`A job with the same id already exists (id=${id})`));
      return false;
    }
    this.lastActive = Date.now();
    this.states.set(id, 'RECEIVED');
    void this.Events.trigger('received', { args: job.args, options: job.options });
    this.receiving++;
    // One job at a time, in the order received, as Bottleneck's submit lock does.
    const added = this.submitting.then(() => this.addToQueue(job));
    this.submitting = added;
    return added;
  }

  private async addToQueue(job: Job): Promise<boolean> {
    const { weight, priority } = job.options;
    const { maxConcurrent, highWater, strategy } = this.limits;
    let reachedHWM = false;
    let blocked = false;
    // Bottleneck's submit and register each take a turn of the event loop; the order of starts
    // its users' code (and Octokit's tests) expect depends on them.
    await sleep(0);
    if (this.stopped?.dropWaitingJobs === true) {
      // Received before stop(): dropped like the jobs stop found waiting.
      this.receiving--;
      this.drop(job, this.stopped.dropErrorMessage);
      return false;
    }
    try {
      if (maxConcurrent != null && weight > maxConcurrent) {
        throw new BottleneckError(
          `Impossible to add a job having a weight of ${weight} to a limiter having a maxConcurrent setting of ${maxConcurrent}`,
        );
      }
      reachedHWM = highWater != null && this.queued() === highWater && !(await this.check(weight));
      const now = Date.now();
      blocked = strategy === STRATEGY.BLOCK && (reachedHWM || this.unblockAt >= now);
      if (blocked) {
        const penalty = penaltyOf(this.limits);
        this.unblockAt = now + penalty;
        for (const queued of this.states.allQueued()) this.drop(queued);
        await this.hooked.scheduler.pause(this.id, penalty + this.limits.minTime);
      }
    } catch (error) {
      this.receiving--;
      this.drop(job, DROPPED, error);
      return false;
    }
    this.receiving--;
    if (blocked) {
      this.drop(job);
      return true;
    }
    if (reachedHWM) {
      const shifted =
        strategy === STRATEGY.LEAK
          ? this.states.lastFrom(priority)
          : strategy === STRATEGY.OVERFLOW_PRIORITY
            ? this.states.lastFrom(priority + 1)
            : strategy === STRATEGY.OVERFLOW
              ? job
              : undefined;
      if (shifted !== undefined) this.drop(shifted);
      if (shifted === undefined || shifted === job) {
        if (shifted === undefined) this.drop(job);
        return true;
      }
    }
    this.states.set(job.options.id, 'QUEUED');
    void this.Events.trigger('queued', { args: job.args, options: job.options, reachedHWM, blocked });
    this.states.enqueue(job);
    this.reservoir.keepAlive(true);
    this.enqueue(job);
    // Bottleneck's submit resolves once the job had its first chance to start.
    await sleep(0);
    return reachedHWM;
  }

  /** A scheduler job's Bottleneck weight (its cost is at least 1; the reservoir takes the weight). */
  private weightOf(scheduled: { readonly signal?: AbortSignal | undefined }): number {
    return (scheduled.signal && this.weights.get(scheduled.signal)) ?? 1;
  }

  private enqueue(job: Job): void {
    const { priority, weight } = job.options;
    const { abort } = job;
    this.weights.set(abort.signal, weight);
    this.hooked.scheduler
      .schedule(() => this.start(job), {
        key: this.id,
        priority,
        cost: Math.max(1, weight),
        signal: abort.signal,
      })
      .then(
        (value) => {
          this.finish(job);
          job.resolve(value);
        },
        (error: unknown) => {
          if (abort.signal.aborted) {
            // Dropped while it waited out minTime: its slots are given back now.
            if (error === DROPPED_RUNNING) this.finish(job);
            return;
          }
          if (this.states.of(job.options.id) === 'QUEUED') {
            this.drop(job, DROPPED, error);
            return;
          }
          this.finish(job);
          job.reject(error);
        },
      );
  }

  /** Granted by the scheduler: the job leaves the queue, takes from the reservoir, and runs. */
  private start(job: Job): Promise<unknown> {
    const { id, weight } = job.options;
    this.dequeue(job);
    this.states.set(id, 'RUNNING');
    this.runningWeight += weight;
    const left = this.reservoir.take(weight);
    const empty = this.empty();
    if (empty) void this.Events.trigger('empty');
    if (left === 0) void this.Events.trigger('depleted', empty);
    const runner: Runner =
      this.chained === null
        ? (_options, task, args) => task(...args)
        : (options, task, args) => this.chained?.schedule(options, task, ...args);
    this.spacing.add(job);
    return runAttempts(job, this.Events, runner, this.nextWait(), () => {
      this.spacing.delete(job);
      if (this.states.of(id) === null) throw DROPPED_RUNNING;
      this.states.set(id, 'EXECUTING');
    }).finally(() => {
      if (job.abort.signal.aborted) return;
      this.states.finish(id);
    });
  }

  private dequeue(job: Job): void {
    this.states.dequeue(job);
    if (this.states.queued() === 0) this.reservoir.keepAlive(false);
  }

  /** How long a job granted now waits for minTime (locally; on a shared store its rule spaced it). */
  private nextWait(): number {
    if (!this.home.local) return 0;
    const now = Date.now();
    const wait = Math.max(this.nextStart - now, 0);
    this.nextStart = now + wait + this.limits.minTime;
    return wait;
  }

  /** After the scheduler gave the job's slots back. */
  private finish(job: Job): void {
    this.runningWeight -= job.options.weight;
    this.doneWeight += job.options.weight;
    this.lastActive = Date.now();
    if (this.runningWeight === 0 && this.empty()) void this.Events.trigger('idle');
    for (const check of [...this.onSettled]) check();
  }

  private drop(job: Job, message = DROPPED, error?: unknown): boolean {
    if (!this.states.remove(job.options.id)) return false;
    this.dequeue(job);
    job.abort.abort(new BottleneckError(message));
    if (this.rejectOnDrop) job.reject(error ?? new BottleneckError(message));
    void this.Events.trigger('dropped', {
      args: job.args,
      options: job.options,
      task: job.task,
      promise: job.promise,
    });
    for (const check of [...this.onSettled]) check();
    return true;
  }
}

Bottleneck.default = Bottleneck;
useLimiterClass((options) => new Bottleneck(options));
