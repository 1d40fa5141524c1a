/**
 * Drives each key's queue in this process: enqueues jobs, and when the head of a key's shared
 * queue is one of this process's jobs, checks the limiter for it, at once or after exactly the
 * wait the last answer gave (one timer per key, never a loop of checks). An allowed job leaves
 * the queue and starts; the next head is told by the queue (pub/sub on Redis). A job given up
 * while waiting leaves the queue having taken nothing.
 */

import { encodeKey, keyHead } from '../base/key-encoding.js';
import type { Decision } from '../core/decision.js';
import type { Limiter } from '../limiter.js';
import type { GrantMark, QueueNews, QueueState, QueueTurn } from '../stores/queue-types.js';
import type { Job } from './jobs.js';
import type { SchedulerHooks } from './scheduler.js';

/** After a pause or a spent budget the head waits this much longer at random, so fleets spread out. */
const JITTER_MS = 50;
/** A failed leave is sent again after this long, a few times: an entry left behind would block its key. */
const RETRY_MS = 1_000;
const LEAVE_TRIES = 5;
/** Keys remembered for the `paused` event of pauses other processes set. */
const KNOWN_KEYS = 10_000;

interface KeyRun {
  readonly key: string;
  readonly head: string;
  /** This process's jobs in the queue, by entry. */
  readonly jobs: Map<string, Job>;
  enqueuing: number;
  running: number;
  turn: QueueTurn;
  /** Date.now() before which the head must not check (the turn's waitMs, plus jitter). */
  gateUntil: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  checking: boolean;
  /** News came during a check: look again as soon as it answers. */
  again: boolean;
}

export interface DriverHooks {
  readonly limiter: Limiter;
  readonly queues: QueueState;
  /** Runs an allowed job; `mark` is the key's grant counters just after it. */
  start(job: Job, decision: Decision, mark: Promise<GrantMark>, done: () => void): void;
  /** A pause another participant set on a key this process knows. */
  paused(key: string, until: number, source: string): void;
  /** A gate of the caller's before the head's check; see SchedulerHooks. */
  readonly admit?: SchedulerHooks['admit'];
  /** Gives back what an admission that answered a promise took; see SchedulerHooks. */
  readonly unadmit?: SchedulerHooks['unadmit'];
}

export interface Driver {
  submit(job: Job): void;
  giveUp(job: Job, reason: unknown): void;
  news(news: QueueNews): void;
  /** The safety re-check: every key with jobs waiting here asks for its turn (and renews liveness). */
  heartbeat(): void;
  waiting(): number;
  /** Entries still queued on a key, as this process last heard (for a wake after a slot is freed). */
  queued(key: string): number;
  /** Rejects every waiting job with `reason` (their entries are dropped by the queues' close). */
  rejectAll(reason: unknown): void;
  /** The head of `key`, if it is this process's, looks again (an `admit` gate opened). */
  nudge(key: string): void;
}

export function createDriver(hooks: DriverHooks): Driver {
  const { limiter, queues } = hooks;
  const runs = new Map<string, KeyRun>();
  // Keys of this process's jobs by head, so a pause told by another process names its key.
  const known = new Map<string, string>();
  const waiting = new Set<Job>();

  function runOf(key: string): KeyRun {
    const head = keyHead(limiter.prefix, key);
    let run = runs.get(head);
    if (run === undefined) {
      known.delete(head);
      known.set(head, key);
      if (known.size > KNOWN_KEYS) known.delete(known.keys().next().value as string);
      run = {
        key,
        head,
        jobs: new Map(),
        enqueuing: 0,
        running: 0,
        turn: { version: -1, head: '', waitMs: 0, queued: 0 },
        gateUntil: 0,
        timer: undefined,
        checking: false,
        again: false,
      };
      runs.set(head, run);
    }
    return run;
  }

  function forgetIfIdle(run: KeyRun): void {
    if (run.jobs.size === 0 && run.enqueuing === 0 && run.running === 0 && !run.checking) {
      clearTimeout(run.timer);
      runs.delete(run.head);
    }
  }

  /** Takes in a turn; `prod` asks to look again even when nothing changed. */
  function apply(run: KeyRun, turn: QueueTurn, prod: boolean): void {
    if (turn.version < run.turn.version) return;
    const changed = turn.version > run.turn.version;
    run.turn = turn;
    if (!changed && !prod) return;
    run.gateUntil = turn.waitMs > 0 ? Date.now() + turn.waitMs + Math.random() * JITTER_MS : 0;
    if (!run.jobs.has(turn.head)) {
      clearTimeout(run.timer);
      run.timer = undefined;
      forgetIfIdle(run);
      return;
    }
    go(run);
  }

  function go(run: KeyRun): void {
    if (run.checking) {
      run.again = true;
      return;
    }
    clearTimeout(run.timer);
    run.timer = undefined;
    const job = run.jobs.get(run.turn.head);
    if (job === undefined) return;
    const wait = run.gateUntil - Date.now();
    if (wait > 0) {
      run.timer = setTimeout(() => {
        run.timer = undefined;
        queues.turn(run.head).then(
          (turn) => apply(run, turn, true),
          () => retryLater(run),
        );
      }, wait);
      return;
    }
    const admitted = hooks.admit === undefined ? true : hooks.admit(run.key, job.options);
    if (admitted === true) check(run, job, false);
    else if (admitted !== false) admitLater(run, job, admitted);
  }

  /** An admission that takes a round trip (a shared reservoir): the head checks once it answers. */
  function admitLater(run: KeyRun, job: Job, admitted: Promise<boolean>): void {
    run.checking = true;
    run.again = false;
    admitted.then(
      (admit) => {
        run.checking = false;
        if (admit && !job.done) {
          check(run, job, true);
          return;
        }
        if (admit) hooks.unadmit?.(run.key, job.options);
        // Refused: the gate nudges when it may open; news meanwhile looks again.
        if (run.again) go(run);
        else forgetIfIdle(run);
      },
      (error: unknown) => {
        run.checking = false;
        giveUp(job, error);
      },
    );
  }

  /** The head's check of the rules; `gated`: an admission took something that a denial gives back. */
  function check(run: KeyRun, job: Job, gated: boolean): void {
    run.checking = true;
    run.again = false;
    limiter.check(run.key, { cost: job.options.cost }).then(
      (decision) => {
        if (gated && (job.done || !decision.allowed)) hooks.unadmit?.(run.key, job.options);
        decided(run, job, decision);
      },
      (error: unknown) => {
        run.checking = false;
        if (gated) hooks.unadmit?.(run.key, job.options);
        giveUp(job, error);
      },
    );
  }

  function retryLater(run: KeyRun): void {
    clearTimeout(run.timer);
    run.timer = setTimeout(() => {
      run.timer = undefined;
      go(run);
    }, RETRY_MS);
  }

  function decided(run: KeyRun, job: Job, decision: Decision): void {
    run.checking = false;
    if (job.done) {
      // Given up while its check was under way: what the check took goes back.
      if (decision.allowed)
        limiter
          .refund(decision)
          .then(() => limiter.release(decision))
          .catch(() => undefined);
      if (run.again) go(run);
      forgetIfIdle(run);
      return;
    }
    if (decision.allowed) {
      leaveQueue(run, job);
      run.running++;
      const left = queues.leave(run.head, job.entry, true);
      left.then(
        ({ turn }) => apply(run, turn, false),
        () => dropLater(run, job.entry, 1),
      );
      hooks.start(
        job,
        decision,
        left.then(({ mark }) => mark),
        () => {
          run.running--;
          forgetIfIdle(run);
        },
      );
      return;
    }
    if (decision.retryAfterMs === Number.POSITIVE_INFINITY) {
      giveUp(
        job,
        new RangeError(
          `cost: ${job.options.cost} is more than the rules of key ${JSON.stringify(run.key)} can ever allow`,
        ),
      );
      return;
    }
    if (run.again) {
      go(run);
      return;
    }
    run.timer = setTimeout(
      () => {
        run.timer = undefined;
        go(run);
      },
      Math.max(1, decision.retryAfterMs),
    );
  }

  /** Out of the queue in this process (its entry is left separately). */
  function leaveQueue(run: KeyRun | undefined, job: Job): void {
    job.done = true;
    job.dispose();
    waiting.delete(job);
    run?.jobs.delete(job.entry);
  }

  /** Takes a given-up entry out of the shared queue, again later if the store fails. */
  function drop(run: KeyRun, entry: string, tries: number): void {
    queues.leave(run.head, entry, false).then(
      ({ turn }) => apply(run, turn, false),
      () => dropLater(run, entry, tries + 1),
    );
  }

  function dropLater(run: KeyRun, entry: string, tries: number): void {
    if (tries < LEAVE_TRIES) setTimeout(() => drop(run, entry, tries), RETRY_MS).unref?.();
  }

  function giveUp(job: Job, reason: unknown): void {
    if (job.done) return;
    const run = runs.get(keyHead(limiter.prefix, job.options.key));
    leaveQueue(run, job);
    job.reject(reason);
    // Not yet enqueued: submit drops the entry when it arrives.
    if (run !== undefined && job.entry !== '') {
      drop(run, job.entry, 0);
      if (run.turn.head === job.entry && !run.checking) {
        clearTimeout(run.timer);
        run.timer = undefined;
      }
      forgetIfIdle(run);
    }
  }

  return {
    submit(job) {
      const run = runOf(job.options.key);
      run.enqueuing++;
      waiting.add(job);
      const { priority, tenant, cost } = job.options;
      queues.enqueue(run.head, priority, encodeKey(tenant ?? ''), cost).then(
        ({ id, turn }) => {
          run.enqueuing--;
          job.entry = id;
          if (job.done) {
            drop(run, id, 0);
            forgetIfIdle(run);
            return;
          }
          run.jobs.set(id, job);
          // The news that it is the head may have come first, before the job was known here.
          apply(run, turn, turn.head === id);
        },
        (error: unknown) => {
          run.enqueuing--;
          giveUp(job, error);
          forgetIfIdle(run);
        },
      );
    },
    giveUp,
    news(news) {
      if (news.kind === 'pause') {
        const key = known.get(news.head);
        if (key !== undefined && news.origin !== queues.id) hooks.paused(key, news.until, news.source);
        return;
      }
      const run = runs.get(news.head);
      if (run !== undefined) apply(run, news.turn, news.forced);
    },
    heartbeat() {
      for (const run of runs.values()) {
        if (run.jobs.size === 0) continue;
        queues.turn(run.head).then(
          (turn) => apply(run, turn, run.timer === undefined && !run.checking),
          () => undefined,
        );
      }
    },
    nudge(key) {
      const run = runs.get(keyHead(limiter.prefix, key));
      if (run !== undefined) go(run);
    },
    waiting: () => waiting.size,
    queued: (key) => runs.get(keyHead(limiter.prefix, key))?.turn.queued ?? 1,
    rejectAll(reason) {
      for (const job of [...waiting]) {
        leaveQueue(runs.get(keyHead(limiter.prefix, job.options.key)), job);
        job.reject(reason);
      }
      for (const run of runs.values()) {
        clearTimeout(run.timer);
        run.timer = undefined;
      }
    },
  };
}
