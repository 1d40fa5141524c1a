/**
 * How a store call ends, for the breaker of its shard, the store's health and the events: answered
 * in time, timed out, failed, or not made because the shard's circuit is open.
 */
import { StoreClosedError, StoreTimeoutError } from '../errors.js';
import type { StoreHealth } from './health.js';
import type { Shard } from './shards.js';
import type { Failure, StoreCallerEvents } from './types.js';

export interface CallEnds {
  /** Whether a call to `shard` may be made now (false while its circuit is open). */
  allow(shard: Shard): boolean;
  /** The call was answered within the deadline: the circuit closes again. */
  answered(shard: Shard, issued: number): void;
  /** The call passed its deadline; its late answer is swallowed by the deadline. */
  timedOut(shard: Shard, issued: number): Failure;
  /** The call failed; a closed store is the application's doing, rethrown (see errors.ts). */
  rejected(shard: Shard, issued: number, error: unknown): Failure;
  /** The call was not made: the circuit is open. */
  cutOff(shard: Shard): Failure;
}

const UNAVAILABLE: Failure = { ok: false, reason: 'unavailable' };
const TIMED_OUT: Failure = { ok: false, reason: 'timeout' };
const FAILED: Failure = { ok: false, reason: 'error' };

export function createCallEnds(
  timeoutMs: number,
  health: StoreHealth,
  events: StoreCallerEvents,
  clock: () => number,
): CallEnds {
  return {
    allow: (shard) => shard.breaker === undefined || shard.breaker.allow(clock()),
    answered(shard, issued) {
      shard.breaker?.succeed();
      health.answered(shard, issued);
    },
    timedOut(shard, issued) {
      shard.breaker?.fail(clock());
      const cause = new StoreTimeoutError(timeoutMs);
      events.storeError(cause);
      health.failed(shard, issued, 'timeout', cause);
      return TIMED_OUT;
    },
    rejected(shard, issued, error) {
      if (error instanceof StoreClosedError) throw error;
      shard.breaker?.fail(clock());
      events.storeError(error);
      health.failed(shard, issued, 'error', error);
      return FAILED;
    },
    cutOff(shard) {
      health.cutOff(shard);
      return UNAVAILABLE;
    },
  };
}
