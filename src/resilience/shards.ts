/**
 * The parts of a store that fail on their own: a Redis Cluster's hash slots (a dead master cuts
 * off its own slots only), or the whole store when it is not partitioned. Each has its own
 * circuit breaker and its own health mark (see health.ts).
 */
import type { Store } from '../stores/types.js';
import type { CircuitBreaker } from './breaker.js';

/** One shard as the store caller sees it. */
export interface Shard {
  /** Undefined when the limiter runs without a breaker. */
  readonly breaker: CircuitBreaker | undefined;
  /** The issue number of the latest-issued call this shard answered (0: none yet). */
  answered: number;
  /** When a call last found this shard failing, on the limiter's clock (kept by health.ts). */
  failingAt: number;
}

/**
 * The shard of each key head: one per cluster slot when the store is partitioned (at most
 * 16,384, so the map stays bounded), otherwise one for the whole store.
 */
export function createShards(
  store: Store,
  newBreaker: (() => CircuitBreaker) | undefined,
): (head: string) => Shard {
  const newShard = (): Shard => ({ breaker: newBreaker?.(), answered: 0, failingAt: 0 });
  const slotOf = store.shardOf?.bind(store);
  if (slotOf === undefined) {
    const whole = newShard();
    return () => whole;
  }
  const shards = new Map<number, Shard>();
  return function shardOf(head: string): Shard {
    const slot = slotOf(head);
    let shard = shards.get(slot);
    if (shard === undefined) {
      shard = newShard();
      shards.set(slot, shard);
    }
    return shard;
  };
}
