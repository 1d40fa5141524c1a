/**
 * The in-memory store: the algorithms' TypeScript specifications run directly on state kept in
 * this process. Bounded: at most `maxKeys` rule states, least recently used evicted first, and
 * expired states are reclaimed as new checks arrive (no timer per key).
 */
import { describe } from '../duration.js';
import { createLru } from '../lru.js';
import type { ResolvedRule } from '../rules.js';
import { rejectUnknownOptions } from './options.js';
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

const MEMORY_STORE_OPTIONS = ['maxKeys', 'clock'];

/**
 * Creates an in-memory store.
 * @example
 * const limiter = createLimiter({ store: memoryStore({ maxKeys: 50_000 }), rules: { algorithm: 'gcra', limit: 10, window: '1s' } });
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store & { readonly size: number } {
  rejectUnknownOptions('memoryStore', options, MEMORY_STORE_OPTIONS);
  const maxKeys = options.maxKeys ?? 100_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
    throw new RangeError(`memoryStore maxKeys: ${describe(maxKeys)} must be an integer >= 1`);
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== 'function')
    throw new TypeError(`memoryStore clock: expected a function, got ${describe(clock)}`);
  const entries = createLru<Entry>(maxKeys);

  /**
   * Drops expired entries from the least recently used end, stopping at the first live one. Each
   * entry is dropped once, so this is amortised O(1) per write, and idle state is reclaimed.
   */
  function reclaim(now: number): void {
    for (
      let oldest = entries.oldest();
      oldest !== undefined && oldest.value.expiresAt <= now;
      oldest = entries.oldest()
    ) {
      entries.delete(oldest.key);
    }
  }

  return {
    kind: 'memory',
    local: true,
    clock,
    get size() {
      return entries.size;
    },
    evaluate(head, rules, cost, consume) {
      const now = clock();
      const raw: number[] = new Array(rules.length * 5);
      const evaluations = new Array(rules.length);
      const found: (Entry | undefined)[] = new Array(rules.length);
      let allAllowed = true;
      for (let i = 0; i < rules.length; i++) {
        const rule = rules[i] as ResolvedRule;
        const entry = entries.get(head + rule.keyTail);
        found[i] = entry;
        const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
        const evaluation = rule.algorithm.evaluate(state, now, cost, rule);
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
          const entry = found[i];
          // Update in place when the entry exists (the lookup above made it the most recently used).
          if (entry !== undefined) {
            entry.state = evaluation.commit();
            entry.expiresAt = now + evaluation.ttlMs;
          } else {
            entries.set(head + (rules[i] as ResolvedRule).keyTail, {
              state: evaluation.commit(),
              expiresAt: now + evaluation.ttlMs,
            });
          }
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
