/**
 * Deadlines: a store call that has not answered in time is abandoned (its late answer or error
 * is swallowed), so a check never waits on a Redis client's offline queue, reconnect loop or a
 * paused server.
 */

/** Returned instead of a value when the deadline passed first. */
export const TIMED_OUT: unique symbol = Symbol('floodgate.timedOut');

/**
 * Resolves with `work`'s value, or with TIMED_OUT after `ms`. A rejection of `work` after the
 * deadline is observed here, so it never becomes an unhandled rejection.
 */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      resolve(TIMED_OUT);
    }, ms);
    work.then(
      (value) => {
        if (settled) return;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
