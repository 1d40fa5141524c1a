/**
 * A limiter's life: open until `close()`, which refuses every later call and resolves once the
 * calls already under way have settled (each is bounded by the store deadline), so a process
 * can shut down without cutting a decision in half.
 */
import { LimiterClosedError } from './errors.js';

export interface Lifecycle {
  readonly closed: boolean;
  /** Runs `work` unless closed (then rejects with LimiterClosedError), counting it until it settles. */
  run<T>(operation: string, work: () => Promise<T>): Promise<T>;
  /** Refuses later calls; resolves when every call under way has settled. Idempotent. */
  close(): Promise<void>;
}

export function createLifecycle(): Lifecycle {
  let closed = false;
  let pending = 0;
  let drained: (() => void) | undefined;
  let closing: Promise<void> | undefined;

  function settled(): void {
    pending--;
    if (pending === 0) drained?.();
  }

  return {
    get closed() {
      return closed;
    },
    run(operation, work) {
      if (closed) return Promise.reject(new LimiterClosedError(operation));
      pending++;
      let promise: Promise<unknown>;
      try {
        promise = work();
      } catch (error) {
        promise = Promise.reject(error);
      }
      // Counted down on either outcome; the caller still sees the rejection.
      promise.then(settled, settled);
      return promise as ReturnType<typeof work>;
    },
    close() {
      closed = true;
      closing ??= new Promise<void>((resolve) => {
        if (pending === 0) resolve();
        else drained = resolve;
      });
      return closing;
    },
  };
}
