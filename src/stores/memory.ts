/**
 * The in-memory store: the algorithms' TypeScript specifications run directly on state kept in
 * this process. Bounded: at most `maxKeys` rule states, least recently used evicted first, and
 * expired states are reclaimed as new checks arrive (no timer per key).
 */
import { describe } from '../duration.js';
import type { ResolvedRule } from '../rules.js';
import type { Store } from './types.js';

export interface MemoryStoreOptions {
  /**
   * Most rule states kept (one per key per rule); past it the least recently used is dropped.
   * Default 100,000, roughly 20-40 MB for the O(1) algorithms.
   */
  maxKeys?: number;
  /** The clock in milliseconds since the epoch. Default `Date.now`; inject one in tests and simulations. */
  clock?: () => number;
}

interface Entry {
  // biome-ignore lint/suspicious/noExplicitAny: the state's type belongs to the rule's algorithm.
  state: any;
  expiresAt: number;
}

/** How many least-recently-used entries each write inspects for expiry. */
const SWEEP_PER_WRITE = 2;

/**
 * Creates an in-memory store.
 * @example
 * const limiter = createLimiter({ store: memoryStore({ maxKeys: 50_000 }), rules: { algorithm: 'gcra', limit: 10, window: '1s' } });
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store & { readonly size: number } {
  const maxKeys = options.maxKeys ?? 100_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
    throw new RangeError(`memoryStore maxKeys: ${describe(maxKeys)} must be an integer >= 1`);
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== 'function')
    throw new TypeError(`memoryStore clock: expected a function, got ${describe(clock)}`);
  // A Map iterates in insertion order; re-inserting on use makes its first entry the least recently used.
  const entries = new Map<string, Entry>();

  function read(key: string, now: number): unknown {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    entries.delete(key);
    if (entry.expiresAt <= now) return undefined;
    entries.set(key, entry);
    return entry.state;
  }

  function write(key: string, state: unknown, expiresAt: number): void {
    entries.delete(key);
    entries.set(key, { state, expiresAt });
  }

  function reclaim(now: number): void {
    let inspected = 0;
    for (const [key, entry] of entries) {
      if (entries.size > maxKeys || entry.expiresAt <= now) entries.delete(key);
      else if (++inspected >= SWEEP_PER_WRITE) break;
    }
  }

  return {
    kind: 'memory',
    local: true,
    clock,
    get size() {
      return entries.size;
    },
    async evaluate(head, rules, cost, consume) {
      const now = clock();
      const raw: number[] = new Array(rules.length * 5);
      const evaluations = new Array(rules.length);
      let allAllowed = true;
      for (let i = 0; i < rules.length; i++) {
        const rule = rules[i] as ResolvedRule;
        const evaluation = rule.algorithm.evaluate(read(head + rule.keyTail, now), now, cost, rule);
        evaluations[i] = evaluation;
        allAllowed &&= evaluation.allowed;
        const at = i * 5;
        raw[at] = evaluation.allowed ? 1 : 0;
        raw[at + 1] = evaluation.remaining;
        raw[at + 2] = evaluation.resetMs;
        raw[at + 3] = evaluation.retryAfterMs;
        raw[at + 4] = evaluation.resetAfterMs;
      }
      if (allAllowed && consume) {
        for (let i = 0; i < rules.length; i++) {
          const evaluation = evaluations[i];
          write(head + (rules[i] as ResolvedRule).keyTail, evaluation.commit(), now + evaluation.ttlMs);
        }
        reclaim(now);
      }
      return raw;
    },
    async reset(head, rules) {
      for (const rule of rules) entries.delete(head + rule.keyTail);
    },
  };
}
