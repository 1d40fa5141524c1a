/**
 * A scheduled job while it waits: its options, its promise's settlers, and what can end the wait
 * early (its `maxWait` timer, its abort signal), undone at once when it leaves the queue.
 */
import { WaitTimeoutError } from '../errors.js';
import type { Grant, JobOptions } from './options.js';

export interface Job {
  readonly options: JobOptions;
  readonly fn: (grant: Grant) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** Its queue entry, `''` until enqueued. */
  entry: string;
  /** Out of the queue: granted, or given up (timed out, aborted, closed, failed). */
  done: boolean;
  /** Stops its maxWait timer and abort listener. */
  dispose(): void;
}

/** A job whose maxWait and signal call `giveUp` with the error it rejects with. */
export function createJob(
  fn: (grant: Grant) => unknown,
  options: JobOptions,
  resolve: (value: unknown) => void,
  reject: (error: unknown) => void,
  giveUp: (job: Job, reason: unknown) => void,
): Job {
  const { maxWaitMs, signal } = options;
  const onAbort = () => giveUp(job, signal?.reason);
  const timer =
    maxWaitMs === undefined
      ? undefined
      : setTimeout(() => giveUp(job, new WaitTimeoutError(maxWaitMs)), maxWaitMs);
  const job: Job = {
    options,
    fn,
    resolve,
    reject,
    entry: '',
    done: false,
    dispose() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  return job;
}
