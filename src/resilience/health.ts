/**
 * A store's health, for the `degraded` and `recovered` events: one `degraded` when calls start
 * failing, one `recovered` when every shard that failed answers again. Derived from the shards
 * (cluster slots), not from the last call alone: while one master of a cluster is down its slots
 * fail and the others' answer, and a single flag would flip at every answer.
 *
 * A shard is failing from a failed or timed-out call (or a call its open breaker answered) until
 * a call to it is answered. Two things do not count:
 * - a failure of a call issued before the shard's latest answered call: a later call already got
 *   through, so it is old news (calls sent to a dead master may fail after the promoted replica
 *   answered newer ones);
 * - a shard that no call has found failing for QUIET_MS: nothing is known about it any more, so a
 *   key seen once during an outage does not hold the store degraded for good.
 */
import type { Degraded } from '../base/types.js';
import type { Shard } from './shards.js';

/** How long a failing shard that no call tries any more keeps the store degraded. */
export const QUIET_MS = 30_000;

export interface HealthEvents {
  degraded(reason: Exclude<Degraded, false>, cause: unknown): void;
  recovered(): void;
}

export interface StoreHealth {
  /** Numbers calls in the order they are issued, for `answered` and `failed`. */
  issue(): number;
  /** Call `issued` was answered by `shard`. */
  answered(shard: Shard, issued: number): void;
  /** Call `issued` failed or timed out on `shard`. */
  failed(shard: Shard, issued: number, reason: Exclude<Degraded, false>, cause: unknown): void;
  /** `shard`'s open breaker answered a call: a failing shard is still failing. */
  cutOff(shard: Shard): void;
}

export function createHealth(events: HealthEvents, clock: () => number): StoreHealth {
  let issued = 0;
  let degraded = false;
  /** Failing shards, least recently found failing first (a Set iterates in insertion order). */
  const failing = new Set<Shard>();

  /** Moves `shard` to the back: the most recently found failing. */
  function mark(shard: Shard, now: number): void {
    failing.delete(shard);
    shard.failingAt = now;
    failing.add(shard);
  }

  /** Forgets the shards no call has found failing for QUIET_MS: they are at the front. */
  function forgetQuiet(now: number): void {
    for (const shard of failing) {
      if (now - shard.failingAt < QUIET_MS) return;
      failing.delete(shard);
    }
  }

  return {
    issue: () => ++issued,
    answered(shard, number) {
      if (number > shard.answered) shard.answered = number;
      // The hot path: a healthy store only records the answer.
      if (!degraded) return;
      failing.delete(shard);
      forgetQuiet(clock());
      if (failing.size > 0) return;
      degraded = false;
      events.recovered();
    },
    failed(shard, number, reason, cause) {
      if (number < shard.answered) return;
      mark(shard, clock());
      if (degraded) return;
      degraded = true;
      events.degraded(reason, cause);
    },
    cutOff(shard) {
      if (failing.has(shard)) mark(shard, clock());
    },
  };
}
