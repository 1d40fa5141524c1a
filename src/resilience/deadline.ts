/**
 * Deadlines: a store call that has not answered in time is abandoned (its late answer or error
 * is swallowed), so a check never waits on a Redis client's offline queue, reconnect loop or a
 * paused server.
 */

/** Returned instead of a value when the deadline passed first. */
export const TIMED_OUT: unique symbol = Symbol('floodgate.timedOut');

interface Waiting {
  readonly expiresAt: number;
  resolve: ((value: typeof TIMED_OUT) => void) | undefined;
}

export interface Deadlines {
  /**
   * Resolves with `work`'s value, or with TIMED_OUT after this queue's `ms`. A rejection of
   * `work` after the deadline is observed here, so it never becomes an unhandled rejection.
   */
  within<T>(work: Promise<T>): Promise<T | typeof TIMED_OUT>;
}

/**
 * Deadlines that all last the same `ms`, on one timer instead of one per call: they expire in
 * the order they were set, so a queue and a timer for its oldest entry suffice. On the hot path
 * this spares a setTimeout/clearTimeout pair per check.
 */
export function createDeadlines(ms: number): Deadlines {
  let queue: Waiting[] = [];
  let first = 0;
  let timer: NodeJS.Timeout | undefined;

  function expire(): void {
    timer = undefined;
    const now = performance.now();
    while (first < queue.length) {
      const waiting = queue[first] as Waiting;
      if (waiting.resolve !== undefined && waiting.expiresAt > now) break;
      waiting.resolve?.(TIMED_OUT);
      first++;
    }
    // Drop the expired and answered entries at the front now and then, not on every call.
    if (first > 1024 && first * 2 > queue.length) {
      queue = queue.slice(first);
      first = 0;
    }
    arm();
  }

  function arm(): void {
    // Skip entries already answered, so the timer waits for a call that is still pending.
    while (first < queue.length && (queue[first] as Waiting).resolve === undefined) first++;
    if (timer !== undefined || first >= queue.length) return;
    const delay = Math.max(0, (queue[first] as Waiting).expiresAt - performance.now());
    timer = setTimeout(expire, delay);
    // A pending deadline must not keep the process alive on its own.
    timer.unref();
  }

  return {
    within<T>(work: Promise<T>): Promise<T | typeof TIMED_OUT> {
      return new Promise((resolve, reject) => {
        const waiting: Waiting = { expiresAt: performance.now() + ms, resolve };
        queue.push(waiting);
        arm();
        work.then(
          (value) => {
            if (waiting.resolve === undefined) return;
            waiting.resolve = undefined;
            resolve(value);
          },
          (error: unknown) => {
            if (waiting.resolve === undefined) return;
            waiting.resolve = undefined;
            reject(error);
          },
        );
      });
    },
  };
}
