/**
 * The in-memory store: the algorithms' TypeScript specifications run directly on state kept in
 * this process. Bounded: at most `maxKeys` rule states, least recently used evicted first, and
 * expired states are reclaimed as new checks arrive (no timer per key). Overrides (few, set by
 * operators) live in a map of their own, outside that bound.
 */
import { RAW_FIELDS } from '../decision.js';
import { describe } from '../duration.js';
import { keyHead } from '../keys.js';
import { createLru } from '../lru.js';
import type { ResolvedRule } from '../rules.js';
import { rejectUnknownOptions } from './options.js';
import type { Store, StoredOverride } from './types.js';

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

interface OverrideEntry {
  prefix: string;
  key: string;
  value: string;
  /** Store clock time it expires at, or undefined for none. */
  expiresAt: number | undefined;
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
  // By key head.
  const overrides = new Map<string, OverrideEntry>();

  /** The live entry under `key` (marked as used), or undefined when absent or expired. */
  function read(key: string, now: number): Entry | undefined {
    const entry = entries.get(key);
    return entry !== undefined && entry.expiresAt > now ? entry : undefined;
  }

  /** Stores a state, updating the entry in place when there is one (it is already most recent). */
  function write(key: string, entry: Entry | undefined, state: unknown, expiresAt: number): void {
    if (entry === undefined) {
      entries.set(key, { state, expiresAt });
    } else {
      entry.state = state;
      entry.expiresAt = expiresAt;
    }
  }

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

  function liveOverride(head: string, now: number): OverrideEntry | undefined {
    // Most stores hold no override at all: spare the hot path a lookup (and a string hash).
    if (overrides.size === 0) return undefined;
    const entry = overrides.get(head);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= now) {
      overrides.delete(head);
      return undefined;
    }
    return entry;
  }

  return {
    kind: 'memory',
    local: true,
    clock,
    get size() {
      return entries.size;
    },
    evaluate(head, rules, cost, consume, overrideSeen) {
      const now = clock();
      const override = overrideSeen === undefined ? undefined : liveOverride(head, now);
      if (overrideSeen !== undefined && (override?.value ?? '') !== overrideSeen) {
        return { overrideChanged: true, value: override?.value };
      }
      const raw: number[] = new Array(rules.length * RAW_FIELDS);
      const evaluations = new Array(rules.length);
      const found: (Entry | undefined)[] = new Array(rules.length);
      let allAllowed = true;
      for (let i = 0; i < rules.length; i++) {
        const rule = rules[i] as ResolvedRule;
        const entry = read(head + rule.keyTail, now);
        found[i] = entry;
        const evaluation = rule.algorithm.evaluate(entry?.state, now, cost, rule);
        evaluations[i] = evaluation;
        allAllowed &&= evaluation.allowed;
        const at = i * RAW_FIELDS;
        raw[at] = evaluation.allowed ? 1 : 0;
        raw[at + 1] = evaluation.remaining;
        raw[at + 2] = evaluation.resetMs;
        raw[at + 3] = evaluation.retryAfterMs;
        raw[at + 4] = evaluation.resetAfterMs;
        raw[at + 5] = evaluation.token;
      }
      if (allAllowed && consume) {
        for (let i = 0; i < rules.length; i++) {
          const evaluation = evaluations[i];
          write(
            head + (rules[i] as ResolvedRule).keyTail,
            found[i],
            evaluation.commit(),
            now + evaluation.ttlMs,
          );
        }
        reclaim(now);
      }
      if (override !== undefined) raw.push(override.expiresAt === undefined ? -1 : override.expiresAt - now);
      return raw;
    },
    async settle(head, rules, reserved, actual, tokens) {
      const now = clock();
      for (let i = 0; i < rules.length; i++) {
        const rule = rules[i] as ResolvedRule;
        const key = head + rule.keyTail;
        const settlement = { token: tokens[i] as number, reserved, actual };
        const entry = read(key, now);
        const result = rule.algorithm.settle(entry?.state, now, settlement, rule);
        if (result === 'delete') entries.delete(key);
        else if (result !== undefined) write(key, entry, result.state, now + result.ttlMs);
      }
      reclaim(now);
    },
    async reset(head, rules) {
      for (const rule of rules) entries.delete(head + rule.keyTail);
    },
    async setOverride(prefix, key, value, ttlMs) {
      const expiresAt = ttlMs === undefined ? undefined : clock() + ttlMs;
      overrides.set(keyHead(prefix, key), { prefix, key, value, expiresAt });
    },
    async clearOverride(prefix, key) {
      overrides.delete(keyHead(prefix, key));
    },
    async listOverrides(prefix) {
      const now = clock();
      const list: StoredOverride[] = [];
      for (const head of [...overrides.keys()]) {
        const entry = liveOverride(head, now);
        if (entry === undefined || entry.prefix !== prefix) continue;
        const expiresInMs = entry.expiresAt === undefined ? undefined : entry.expiresAt - now;
        list.push({ key: entry.key, value: entry.value, expiresInMs });
      }
      return list;
    },
  };
}
