/**
 * The in-memory store: the algorithms' TypeScript specifications run directly on state kept in
 * this process. Bounded: at most `maxKeys` rule states (chains.ts); overrides (few, set by
 * operators) live in a map of their own, outside that bound (overrides.ts).
 */
import { splitHead } from '../../base/key-encoding.js';
import type { LruEntry } from '../../base/lru.js';
import type { ResolvedRule } from '../../base/types.js';
import { describe } from '../../describe.js';
import { checkOptions } from '../../options.js';
import type { CachedHead, Evaluated, OverrideChanged, RuleOutcome, Store } from '../types.js';
import { createChains } from './chains.js';
import { createMemoryOverrides } from './overrides.js';
import { createRun } from './run.js';
import { changeConcurrencySlots, resetSlots, settleSlots } from './settle.js';
import type { Slot } from './slots.js';

export interface MemoryStoreOptions {
  /**
   * Most rule states kept (one per key per rule); past it the least recently used key's states are dropped.
   * Default 100,000: ~30 MB for 100,000 one-rule keys of an O(1) algorithm, plus ~10 MB for each
   * limiter's cache of their key heads (which holds up to `maxKeys` keys, so that a check finds
   * its state without rebuilding the key's name).
   */
  maxKeys?: number;
  /** The clock in milliseconds since the epoch. Default `Date.now`; inject one in tests and simulations. */
  clock?: () => number;
}

const MEMORY_STORE_OPTIONS = new Set(['maxKeys', 'clock']);

/** The options, validated, with their defaults. */
function resolveOptions(options: MemoryStoreOptions): { maxKeys: number; clock: () => number } {
  checkOptions(options, { owner: 'memoryStore', expected: 'an options object', known: MEMORY_STORE_OPTIONS });
  const maxKeys = options.maxKeys ?? 100_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
    throw new RangeError(`memoryStore maxKeys: ${describe(maxKeys)} must be an integer >= 1`);
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== 'function')
    throw new TypeError(`memoryStore clock: expected a function, got ${describe(clock)}`);
  return { maxKeys, clock };
}

/**
 * Creates an in-memory store.
 * @example
 * const limiter = createLimiter({ store: memoryStore({ maxKeys: 50_000 }), rules: { algorithm: 'gcra', limit: 10, window: '1s' } });
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store & { readonly size: number } {
  const { maxKeys, clock } = resolveOptions(options);
  const chains = createChains(maxKeys);
  const overrides = createMemoryOverrides();
  const run = createRun(chains);

  /** The fast path (see Store.inProcess): the cached head's handle spares the chain's lookup. */
  function evaluateCached(
    cached: CachedHead,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
  ): readonly RuleOutcome[] | OverrideChanged {
    const now = clock();
    const { head, prefix, encoded } = cached;
    const override = overrides.live(head, now);
    if (override !== undefined) return { overrideChanged: true, value: override.value };
    let entry = cached.handle as LruEntry<Slot> | undefined;
    // A stale handle (its chain was dropped, and the key may have a new one): look it up.
    if (entry === undefined || !chains.touch(entry)) {
      entry = chains.entry(encoded);
      cached.handle = entry;
    }
    const outcomes = run(encoded, prefix, entry?.value, rules, cost, consume, now);
    // A chain this check created: keep its handle (it is the newest, so the lookup moves nothing).
    if (entry === undefined && consume) cached.handle = chains.entry(encoded);
    return outcomes;
  }

  return {
    kind: 'memory',
    local: true,
    inProcess: { evaluate: evaluateCached, maxKeys },
    clock,
    get size() {
      return chains.size;
    },
    evaluate(head, rules, cost, consume, overrideSeen) {
      const now = clock();
      const override = overrideSeen === undefined ? undefined : overrides.live(head, now);
      if (overrideSeen !== undefined && (override?.value ?? '') !== overrideSeen) {
        return { overrideChanged: true, value: override?.value };
      }
      const { prefix, encoded } = splitHead(head);
      const outcomes = run(encoded, prefix, chains.get(encoded), rules, cost, consume, now);
      if (override === undefined) return { outcomes };
      const overrideTtlMs =
        override.expiresAt === undefined ? Number.POSITIVE_INFINITY : override.expiresAt - now;
      return { outcomes, overrideTtlMs } satisfies Evaluated;
    },
    async settle(head, rules, reserved, actual, tokens, refund = false) {
      const { prefix, encoded } = splitHead(head);
      settleSlots(chains, encoded, prefix, rules, reserved, actual, tokens, clock(), refund);
    },
    async slots(head, rules, _cost, tokens, action) {
      const { prefix, encoded } = splitHead(head);
      return changeConcurrencySlots(chains, encoded, prefix, rules, tokens, action, clock());
    },
    async reset(head, rules) {
      const { prefix, encoded } = splitHead(head);
      resetSlots(chains, encoded, prefix, rules, clock());
    },
    async setOverride(prefix, key, value, ttlMs) {
      overrides.set(prefix, key, value, ttlMs === undefined ? undefined : clock() + ttlMs);
    },
    async clearOverride(prefix, key) {
      overrides.clear(prefix, key);
    },
    async listOverrides(prefix) {
      return overrides.list(prefix, clock());
    },
  };
}
