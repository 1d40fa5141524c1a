/**
 * The in-memory store: the algorithms' TypeScript specifications run directly on state kept in
 * this process. Bounded: at most `maxKeys` rule states, least recently used evicted first, and
 * states a second past their expiry are reclaimed as new checks arrive (no timer per key). Overrides (few, set by
 * operators) live in a map of their own, outside that bound.
 */
import type { SettleResult } from '../../algorithms/index.js';
import { RAW_FIELDS } from '../../core/decision.js';
import { keyHead, splitHead } from '../../core/key-encoding.js';
import { createLru, type LruEntry } from '../../core/lru.js';
import type { ResolvedRule } from '../../core/types.js';
import { describe } from '../../describe.js';
import { checkOptions } from '../../options.js';
import type { EvaluateReply, Store, StoredOverride } from '../types.js';

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

/**
 * One rule's state under one key. A key's slots, of every limiter prefix that checked it, are
 * chained from the one the LRU holds under the encoded key, so a check finds all its rules'
 * states with one lookup, and a one-rule key is one object.
 *
 * Chains are found by the encoded key rather than by the head (`<prefix>:{<encoded key>}`) because
 * a lookup must hash its string, and the encoded key of an ordinary key is the very string the
 * caller passed, whose hash V8 keeps once computed (the limiter's head cache computes it). A
 * freshly built head would cost its own hash on every check whose head the cache no longer holds.
 */
interface Slot {
  readonly prefix: string;
  readonly tail: string;
  // biome-ignore lint/suspicious/noExplicitAny: the state's type belongs to the rule's algorithm.
  state: any;
  expiresAt: number;
  next: Slot | undefined;
  /** Kept on a chain's first slot: no slot of the chain lives past this (an upper bound). */
  chainExpiresAt: number;
}

interface OverrideEntry {
  prefix: string;
  key: string;
  value: string;
  /** Store clock time it expires at, or undefined for none. */
  expiresAt: number | undefined;
}

/**
 * The slot of `tail` under `prefix` in a chain, or undefined. Both are usually the limiter's own
 * strings, so the comparisons are `===` at once.
 */
function slotOf(first: Slot | undefined, prefix: string, tail: string): Slot | undefined {
  let slot = first;
  while (slot !== undefined && (slot.tail !== tail || slot.prefix !== prefix)) slot = slot.next;
  return slot;
}

/** Each rule's position in its list, by key tail: built once per rule list. */
const ruleIndexes = new WeakMap<readonly ResolvedRule[], Map<string, number>>();

/**
 * Each rule's slot under `prefix` in a chain (undefined where it has none), in one pass over the
 * chain: looking each rule up with slotOf walks the chain once per rule, quadratic in the rules.
 */
function slotsOf(
  first: Slot | undefined,
  prefix: string,
  rules: readonly ResolvedRule[],
): (Slot | undefined)[] {
  let index = ruleIndexes.get(rules);
  if (index === undefined) {
    index = new Map(rules.map((rule, i) => [rule.keyTail, i]));
    ruleIndexes.set(rules, index);
  }
  const slots: (Slot | undefined)[] = new Array(rules.length).fill(undefined);
  for (let slot = first; slot !== undefined; slot = slot.next) {
    if (slot.prefix !== prefix) continue;
    const at = index.get(slot.tail);
    if (at !== undefined) slots[at] = slot;
  }
  return slots;
}

/** The last slot of a chain. */
function lastOf(first: Slot | undefined): Slot | undefined {
  let last = first;
  while (last?.next !== undefined) last = last.next;
  return last;
}

/** A slot's state while it matters; expired state reads as none, whether or not it was reclaimed yet. */
function liveState(slot: Slot | undefined, now: number): unknown {
  return slot !== undefined && slot.expiresAt > now ? slot.state : undefined;
}

const MEMORY_STORE_OPTIONS = new Set(['maxKeys', 'clock']);

/**
 * A key's head as a limiter caches it, with the memory store's handle to the key's state: a
 * check then reaches its slots without looking the key up again (one Map lookup fewer per check).
 */
export interface CachedHead {
  readonly head: string;
  /** The head's parts (see headOf): the limiter's prefix and the encoded key. */
  readonly prefix: string;
  readonly encoded: string;
  /** The store's own, opaque to the limiter; undefined until the store sets it. */
  handle: unknown;
}

/** `evaluate` with no override known to the caller (`overrideSeen` `''`), for a cached head. */
export type EvaluateCached = (
  cached: CachedHead,
  rules: readonly ResolvedRule[],
  cost: number,
  consume: boolean,
) => EvaluateReply;

/** What a limiter needs to call a memory store through its cached heads. */
export interface CachedEvaluator {
  readonly evaluate: EvaluateCached;
  /** The store's bound on rule states (a bound on the keys it holds, too). */
  readonly maxKeys: number;
}

// Kept beside each memory store rather than on it, so the store's public shape is unchanged.
const cachedEvaluators = new WeakMap<Store, CachedEvaluator>();

/** The cached-head evaluator of a store made by memoryStore(), or undefined for any other store. */
export function evaluatorForCachedHeads(store: Store): CachedEvaluator | undefined {
  return cachedEvaluators.get(store);
}

/**
 * How long an expired chain is kept before it is reclaimed. A bucket under its limit expires
 * within milliseconds (its state is then as good as none), but a busy key is back soon after:
 * dropping it at once would make every check of a key a Map insert plus a delete. Expired state
 * is never read as live (see evaluate).
 */
const RECLAIM_AFTER_MS = 1_000;

/**
 * Creates an in-memory store.
 * @example
 * const limiter = createLimiter({ store: memoryStore({ maxKeys: 50_000 }), rules: { algorithm: 'gcra', limit: 10, window: '1s' } });
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store & { readonly size: number } {
  checkOptions(options, { owner: 'memoryStore', expected: 'an options object', known: MEMORY_STORE_OPTIONS });
  const maxKeys = options.maxKeys ?? 100_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
    throw new RangeError(`memoryStore maxKeys: ${describe(maxKeys)} must be an integer >= 1`);
  }
  const clock = options.clock ?? Date.now;
  if (typeof clock !== 'function')
    throw new TypeError(`memoryStore clock: expected a function, got ${describe(clock)}`);
  // Slot chains by encoded key (see Slot), least recently used first. Unbounded itself: reclaim()
  // bounds the states, and so the chains. With a bound of its own (maxKeys chains), a full store's
  // new chain made it drop the oldest one unseen by the state count, and reclaim() then dropped
  // another: one state fewer than maxKeys, and with maxKeys 1 every write dropped at once.
  const chains = createLru<Slot>(Number.POSITIVE_INFINITY);
  let stateCount = 0;
  let reclaimedAt = Number.NaN;
  // By key head (few, and looked up only while there are any).
  const overrides = new Map<string, OverrideEntry>();

  function dropChain(encoded: string, first: Slot): void {
    chains.delete(encoded);
    for (let slot: Slot | undefined = first; slot !== undefined; slot = slot.next) stateCount--;
  }

  /**
   * Stores `state` in `slot` (or a new slot for `prefix` and `tail` at the end of `encoded`'s
   * chain, creating the chain as needed; `last`, when given, is that end). Returns the chain's
   * first slot.
   */
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
        chains.set(encoded, created);
        return created;
      }
      last.next = created;
    }
    const chainStart = first ?? (slot as Slot);
    if (expiresAt > chainStart.chainExpiresAt) chainStart.chainExpiresAt = expiresAt;
    return chainStart;
  }

  /** Removes `doomed` slots from the chain starting at `first`, in one pass. */
  function removeSlots(encoded: string, first: Slot, doomed: ReadonlySet<Slot>): void {
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
      chains.delete(encoded);
    } else if (head !== first) {
      head.chainExpiresAt = first.chainExpiresAt;
      chains.set(encoded, head);
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
    for (let oldest = chains.oldest(); oldest !== undefined; oldest = chains.oldest()) {
      if (oldest.value.chainExpiresAt > expiredBy && stateCount <= maxKeys) break;
      dropChain(oldest.key, oldest.value);
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

  /**
   * Commits `rule` to `slot` (found in the chain starting at `first`, or none; `state` is its live
   * state), the new state lasting `resetAfterMs`. Returns the chain's first slot.
   */
  function commitRule(
    encoded: string,
    prefix: string,
    first: Slot | undefined,
    slot: Slot | undefined,
    state: unknown,
    rule: ResolvedRule,
    cost: number,
    now: number,
    resetAfterMs: number,
    last?: Slot,
  ): Slot {
    // An expired state, for the algorithm to overwrite rather than allocate one (see Algorithm.commit).
    const spare = state === undefined ? slot?.state : undefined;
    const next = rule.algorithm.commit(state, now, cost, rule, spare);
    // The committed state lasts until the quota would be fully restored (resetAfterMs).
    return write(encoded, first, slot, prefix, rule.keyTail, next, now + resetAfterMs, last ?? lastOf(first));
  }

  /**
   * Evaluates `rules` under `prefix` on the chain of `encoded` starting at `first` and, if all
   * allow and `consume`, commits them.
   */
  function run(
    encoded: string,
    prefix: string,
    first: Slot | undefined,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
    now: number,
  ): number[] {
    const count = rules.length;
    if (count === 1) {
      // The usual case: the slot is found once, and the numbers are one packed literal rather than
      // the loop's holey array filled field by field.
      const rule = rules[0] as ResolvedRule;
      const slot = slotOf(first, prefix, rule.keyTail);
      const state = liveState(slot, now);
      const { allowed, remaining, resetMs, retryAfterMs, resetAfterMs, token } = rule.algorithm.evaluate(
        state,
        now,
        cost,
        rule,
      );
      if (allowed && consume) {
        commitRule(encoded, prefix, first, slot, state, rule, cost, now, resetAfterMs);
        reclaim(now);
      }
      return [allowed ? 1 : 0, remaining, resetMs, retryAfterMs, resetAfterMs, token];
    }
    const raw: number[] = new Array(count * RAW_FIELDS);
    const slots = slotsOf(first, prefix, rules);
    let allAllowed = true;
    for (let i = 0; i < count; i++) {
      const rule = rules[i] as ResolvedRule;
      const evaluation = rule.algorithm.evaluate(liveState(slots[i], now), now, cost, rule);
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
      let chain = first;
      let last = lastOf(first);
      for (let i = 0; i < count; i++) {
        const rule = rules[i] as ResolvedRule;
        const slot = slots[i];
        const resetAfterMs = raw[i * RAW_FIELDS + 4] as number;
        chain = commitRule(
          encoded,
          prefix,
          chain,
          slot,
          liveState(slot, now),
          rule,
          cost,
          now,
          resetAfterMs,
          last,
        );
        // A new slot went to the end of the chain.
        if (slot === undefined) last = last === undefined ? chain : (last.next as Slot);
      }
      reclaim(now);
    }
    return raw;
  }

  function evaluateCached(
    cached: CachedHead,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
  ): EvaluateReply {
    const now = clock();
    const { head, prefix, encoded } = cached;
    const override = liveOverride(head, now);
    if (override !== undefined) return { overrideChanged: true, value: override.value };
    let entry = cached.handle as LruEntry<Slot> | undefined;
    // A stale handle (its chain was dropped, and the key may have a new one): look it up.
    if (entry === undefined || !chains.touch(entry)) {
      entry = chains.entry(encoded);
      cached.handle = entry;
    }
    const raw = run(encoded, prefix, entry?.value, rules, cost, consume, now);
    // A chain this check created: keep its handle (it is the newest, so the lookup moves nothing).
    if (entry === undefined && consume) cached.handle = chains.entry(encoded);
    return raw;
  }

  /** Applies `step` to each rule's live state under `head`, storing or deleting what it returns. */
  function change(
    head: string,
    rules: readonly ResolvedRule[],
    step: (rule: ResolvedRule, state: unknown, now: number, index: number) => SettleResult<unknown>,
  ): void {
    const now = clock();
    const { prefix, encoded } = splitHead(head);
    let first = chains.get(encoded);
    let last = lastOf(first);
    const slots = slotsOf(first, prefix, rules);
    const doomed = new Set<Slot>();
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i] as ResolvedRule;
      const slot = slots[i];
      const result = step(rule, liveState(slot, now), now, i);
      if (result === 'delete') {
        if (slot !== undefined) doomed.add(slot);
      } else if (result !== undefined) {
        first = write(encoded, first, slot, prefix, rule.keyTail, result.state, now + result.ttlMs, last);
        if (slot === undefined) last = last === undefined ? first : (last.next as Slot);
      }
    }
    if (first !== undefined && doomed.size > 0) removeSlots(encoded, first, doomed);
    reclaim(now);
  }

  const store: Store & { readonly size: number } = {
    kind: 'memory',
    local: true,
    clock,
    get size() {
      return stateCount;
    },
    evaluate(head, rules, cost, consume, overrideSeen) {
      const now = clock();
      const override = overrideSeen === undefined ? undefined : liveOverride(head, now);
      if (overrideSeen !== undefined && (override?.value ?? '') !== overrideSeen) {
        return { overrideChanged: true, value: override?.value };
      }
      const { prefix, encoded } = splitHead(head);
      const raw = run(encoded, prefix, chains.get(encoded), rules, cost, consume, now);
      if (override !== undefined) raw.push(override.expiresAt === undefined ? -1 : override.expiresAt - now);
      return raw;
    },
    async settle(head, rules, reserved, actual, tokens) {
      change(head, rules, (rule, state, now, i) =>
        rule.algorithm.settle(state, now, { token: tokens[i] as number, reserved, actual }, rule),
      );
    },
    async slots(head, rules, _cost, tokens, action) {
      let touched = 0;
      change(head, rules, (rule, state, now, i) => {
        const change = rule.algorithm.slots?.[action](state, now, tokens[i] as number, rule);
        touched += change?.slots ?? 0;
        return change?.result;
      });
      return touched;
    },
    async reset(head, rules) {
      if (chains.get(splitHead(head).encoded) === undefined) return;
      change(head, rules, (rule, state, now) => rule.algorithm.slots?.reset(state, now) ?? 'delete');
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
  cachedEvaluators.set(store, { evaluate: evaluateCached, maxKeys });
  return store;
}
