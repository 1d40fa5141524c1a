/** The errors Floodgate throws or rejects with, by class, so callers can tell them apart. */

/** Thrown (as a rejection) by every call on a limiter after `close()`. */
export class LimiterClosedError extends Error {
  constructor(operation: string) {
    super(`floodgate: limiter.${operation}() was called after limiter.close(); create a new limiter`);
    this.name = 'LimiterClosedError';
  }
}

/**
 * A store whose client was closed by its owner (quit, disconnect, or never connected) cannot
 * answer again until the application makes a new one: such a failure is not transient, so a
 * check rejects with this error rather than being answered by `onStoreError` indefinitely.
 */
export class StoreClosedError extends Error {
  constructor(kind: string, cause: unknown) {
    super(
      `floodgate: the ${kind} store's client is closed (quit, disconnected for good, or never connected); checks cannot be decided until the store is given an open client`,
      { cause },
    );
    this.name = 'StoreClosedError';
  }
}

/** A store call that did not answer within the limiter's `timeout`. */
export class StoreTimeoutError extends Error {
  constructor(ms: number) {
    super(`floodgate: the store did not answer within ${ms} ms`);
    this.name = 'StoreTimeoutError';
  }
}

/** A job given to a scheduler while `highWater` jobs already wait in this process: rejected at once. */
export class QueueFullError extends Error {
  constructor(highWater: number) {
    super(`floodgate: ${highWater} jobs already wait in this scheduler (highWater); the job was not queued`);
    this.name = 'QueueFullError';
  }
}

/** A scheduled job that waited its whole `maxWait` without its turn: it never ran and took nothing. */
export class WaitTimeoutError extends Error {
  constructor(maxWaitMs: number) {
    super(`floodgate: the job waited ${maxWaitMs} ms (maxWait) without its turn; it never ran`);
    this.name = 'WaitTimeoutError';
  }
}
