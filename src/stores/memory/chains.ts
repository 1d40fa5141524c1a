/**
 * The memory store's bounded map of slot chains (see slots.ts): at most `maxKeys` rule states,
 * least recently used dropped first, and chains a second past their expiry reclaimed as new
 * writes arrive (no timer per key).
 */
import { createLru, type LruEntry } from '../../base/lru.js';
import { lastOf, type Slot } from './slots.js';

/**
 * How long an expired chain is kept before it is reclaimed. A bucket under its limit expires
 * within milliseconds (its state is then as good as none), but a busy key is back soon after:
 * dropping it at once would make every check of a key a Map insert plus a delete. Expired state
 * is never read as live (see liveState).
 */
const RECLAIM_AFTER_MS = 1_000;

export interface Chains {
  /** Rule states held. */
  readonly size: number;
  /** The first slot of `encoded`'s chain, marked as most recently used. */
  get(encoded: string): Slot | undefined;
  /** The chain's entry (a handle for `touch`), marked as most recently used. */
  entry(encoded: string): LruEntry<Slot> | undefined;
  /** Marks a handle's chain as most recently used; false when the chain was dropped since. */
  touch(entry: LruEntry<Slot>): boolean;
  /**
   * Stores `state` in `slot` (or a new slot for `prefix` and `tail` at the end of `encoded`'s
   * chain, creating the chain as needed; `last`, when given, is that end). Returns the chain's
   * first slot.
   */
  write(
    encoded: string,
    first: Slot | undefined,
    slot: Slot | undefined,
    prefix: string,
    tail: string,
    state: unknown,
    expiresAt: number,
    last?: Slot,
  ): Slot;
  /** Removes `doomed` slots from the chain starting at `first`, in one pass. */
  remove(encoded: string, first: Slot, doomed: ReadonlySet<Slot>): void;
  /** Drops expired and, past the bound, least recently used chains (see createChains). */
  reclaim(now: number): void;
}

export function createChains(maxKeys: number): Chains {
  // Slot chains by encoded key, least recently used first. Unbounded itself: reclaim() bounds the
  // states, and so the chains (a bound of its own would drop chains unseen by the state count).
  const lru = createLru<Slot>(Number.POSITIVE_INFINITY);
  let stateCount = 0;
  let reclaimedAt = Number.NaN;

  function dropChain(encoded: string, first: Slot): void {
    lru.delete(encoded);
    for (let slot: Slot | undefined = first; slot !== undefined; slot = slot.next) stateCount--;
  }

  function write(
    encoded: string,
    first: Slot | undefined,
    slot: Slot | undefined,
    prefix: string,
    tail: string,
    state: unknown,
    expiresAt: number,
    last: Slot | undefined = lastOf(first),
  ): Slot {
    if (slot !== undefined) {
      slot.state = state;
      slot.expiresAt = expiresAt;
    } else {
      const created: Slot = { prefix, tail, state, expiresAt, next: undefined, chainExpiresAt: expiresAt };
      stateCount++;
      if (first === undefined || last === undefined) {
        lru.set(encoded, created);
        return created;
      }
      last.next = created;
    }
    const chainStart = first ?? (slot as Slot);
    if (expiresAt > chainStart.chainExpiresAt) chainStart.chainExpiresAt = expiresAt;
    return chainStart;
  }

  function remove(encoded: string, first: Slot, doomed: ReadonlySet<Slot>): void {
    let head: Slot | undefined;
    let last: Slot | undefined;
    for (let slot: Slot | undefined = first; slot !== undefined; slot = slot.next) {
      if (doomed.has(slot)) {
        stateCount--;
        continue;
      }
      if (last === undefined) head = slot;
      else last.next = slot;
      last = slot;
    }
    if (last !== undefined) last.next = undefined;
    if (head === undefined) {
      lru.delete(encoded);
    } else if (head !== first) {
      head.chainExpiresAt = first.chainExpiresAt;
      lru.set(encoded, head);
    }
  }

  /**
   * Drops chains that expired over RECLAIM_AFTER_MS ago from the least recently used end,
   * stopping at the first other one (each chain is dropped once: amortised O(1) per write, and
   * idle state is reclaimed), then the least recently used ones while more than maxKeys states
   * are held.
   */
  function reclaim(now: number): void {
    // Within one millisecond the oldest chain stays as it was (or was just dropped): skip the
    // look, a random memory access per check, unless the bound is exceeded.
    if (now === reclaimedAt && stateCount <= maxKeys) return;
    reclaimedAt = now;
    const expiredBy = now - RECLAIM_AFTER_MS;
    for (let oldest = lru.oldest(); oldest !== undefined; oldest = lru.oldest()) {
      if (oldest.value.chainExpiresAt > expiredBy && stateCount <= maxKeys) break;
      dropChain(oldest.key, oldest.value);
    }
  }

  return {
    get size() {
      return stateCount;
    },
    get: lru.get,
    entry: lru.entry,
    touch: lru.touch,
    write,
    remove,
    reclaim,
  };
}
