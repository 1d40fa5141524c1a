/**
 * Deadlines: a store call that has not answered in time is abandoned (its late answer or error
 * is swallowed), so a check never waits on a Redis client's offline queue, reconnect loop or a
 * paused server.
 *
 * A deadline measures the store, not this process's event loop. Its clock starts at the turn's
 * check phase (where the Redis store sends the turn's batch), not when the check was issued, so
 * time the loop spent before sending is not counted; but a call made while no other call awaits
 * its answer starts its clock once the code that made it yields (a microtask), where the Redis
 * store sends such a check, sparing the turn it would wait for. And an expired deadline is judged
 * only after the loop has polled for I/O once more (setImmediate): a reply that arrived in time
 * but sat in the socket while the loop was busy (a long synchronous handler, a GC pause) wins
 * over the timer.
 */
import { nextTurn, unref } from '../turns.js';

/** Returned instead of a value when the deadline passed first. */
export const TIMED_OUT: unique symbol = Symbol('floodgate.timedOut');

/** A call under a deadline, as the deadlines see it: the caller's own object, so tracking allocates nothing. */
export interface Tracked {
  /** Set by the deadlines: Infinity until the check phase that starts its clock. */
  expiresAt: number;
  /** Set by the deadlines: true while the call is neither answered nor expired. */
  pending: boolean;
  /** Called once, when the deadline passes before the call is answered. */
  expire(): void;
}

export interface Deadlines {
  /**
   * Resolves with `work`'s value, or with TIMED_OUT once `work` has been unanswered for this
   * queue's `ms` of the store's time. A rejection of `work` after the deadline is observed here,
   * so it never becomes an unhandled rejection.
   */
  within<T>(work: Promise<T>): Promise<T | typeof TIMED_OUT>;
  /** Starts a deadline for `call`, as within does: `call.expire()` runs if it passes first. */
  track(call: Tracked): void;
  /**
   * Marks `call` answered; false when its deadline passed first (its answer is then dropped).
   * The callback form of within, for the hot path: no promise of its own.
   */
  answer(call: Tracked): boolean;
}

/** within's entry: its promise resolves with TIMED_OUT on expiry. */
class PromiseCall<T> implements Tracked {
  expiresAt = Number.POSITIVE_INFINITY;
  pending = true;
  constructor(readonly resolve: (value: T | typeof TIMED_OUT) => void) {}
  expire(): void {
    this.resolve(TIMED_OUT);
  }
}

/**
 * Deadlines that all last the same `ms`, on one timer and at most two immediates per turn instead
 * of a timer per call: they expire in the order they were set, so a queue and a timer for its
 * oldest entry suffice. On the hot path this spares a setTimeout/clearTimeout pair per check.
 */
export function createDeadlines(ms: number): Deadlines {
  let queue: Tracked[] = [];
  /** Calls neither answered nor timed out. */
  let unanswered = 0;
  let first = 0;
  /** Entries before this index have their clock started. */
  let started = 0;
  let starting = false;
  let judging = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Starts the clock of every entry set since the last check phase: they share one expiry. */
  function start(): void {
    starting = false;
    const expiresAt = performance.now() + ms;
    for (let i = Math.max(first, started); i < queue.length; i++) (queue[i] as Tracked).expiresAt = expiresAt;
    started = queue.length;
    arm();
  }

  /** The timer fired: judge after the I/O poll that follows, with the expiry as of now. */
  function expire(): void {
    timer = undefined;
    judging = true;
    const cutoff = performance.now();
    nextTurn(() => judge(cutoff));
  }

  function judge(cutoff: number): void {
    judging = false;
    while (first < started) {
      const call = queue[first] as Tracked;
      if (call.pending && call.expiresAt > cutoff) break;
      if (settle(call)) call.expire();
      first++;
    }
    // Drop the expired and answered entries at the front now and then, not on every call.
    if (first > 1024 && first * 2 > queue.length) {
      queue = queue.slice(first);
      started -= first;
      first = 0;
    }
    arm();
  }

  /** Marks a call answered or expired; false when it already was. */
  function settle(call: Tracked): boolean {
    if (!call.pending) return false;
    call.pending = false;
    unanswered--;
    return true;
  }

  function answer(call: Tracked): boolean {
    if (!settle(call)) return false;
    // With every call answered, forget them at once rather than at the next judgement: an entry
    // keeps its caller's objects (a check's promise and decision) alive until then.
    if (unanswered === 0) {
      queue.length = 0;
      first = 0;
      started = 0;
    }
    return true;
  }

  function arm(): void {
    // Skip entries already answered, so the timer waits for a call that is still pending.
    while (first < started && !(queue[first] as Tracked).pending) first++;
    if (timer !== undefined || judging || first >= started) return;
    const delay = Math.max(0, (queue[first] as Tracked).expiresAt - performance.now());
    timer = setTimeout(expire, delay);
    // A pending deadline must not keep the process alive on its own.
    unref(timer);
  }

  function track(call: Tracked): void {
    call.expiresAt = Number.POSITIVE_INFINITY;
    call.pending = true;
    queue.push(call);
    if (!starting) {
      starting = true;
      // The only call awaiting an answer is sent once the code that made it yields (see above).
      if (++unanswered === 1) queueMicrotask(start);
      else nextTurn(start);
    } else {
      unanswered++;
    }
  }

  return {
    track,
    answer,
    within<T>(work: Promise<T>): Promise<T | typeof TIMED_OUT> {
      return new Promise((resolve, reject) => {
        const call = new PromiseCall<T>(resolve);
        track(call);
        work.then(
          (value) => {
            if (answer(call)) resolve(value);
          },
          (error: unknown) => {
            if (answer(call)) reject(error);
          },
        );
      });
    },
  };
}
