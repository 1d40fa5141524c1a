/**
 * The memory store's state layout: one slot per rule per key, chained under the key. A key's
 * slots, of every limiter prefix that checked it, are chained from the one the store keeps under
 * the encoded key, so a check finds all its rules' states with one lookup, and a one-rule key is
 * one object.
 *
 * Chains are found by the encoded key rather than by the head (`<prefix>:{<encoded key>}`) because
 * a lookup must hash its string, and the encoded key of an ordinary key is the very string the
 * caller passed, whose hash V8 keeps once computed (the limiter's head cache computes it). A
 * freshly built head would cost its own hash on every check whose head the cache no longer holds.
 */
import type { ResolvedRule } from '../../base/types.js';

/** One rule's state under one key. */
export interface Slot {
  readonly prefix: string;
  readonly tail: string;
  // biome-ignore lint/suspicious/noExplicitAny: the state's type belongs to the rule's algorithm.
  state: any;
  expiresAt: number;
  next: Slot | undefined;
  /** Kept on a chain's first slot: no slot of the chain lives past this (an upper bound). */
  chainExpiresAt: number;
}

/**
 * The slot of `tail` under `prefix` in a chain, or undefined. Both are usually the limiter's own
 * strings, so the comparisons are `===` at once.
 */
export function slotOf(first: Slot | undefined, prefix: string, tail: string): Slot | undefined {
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
export function slotsOf(
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
export function lastOf(first: Slot | undefined): Slot | undefined {
  let last = first;
  while (last?.next !== undefined) last = last.next;
  return last;
}

/** A slot's state while it matters; expired state reads as none, whether or not it was reclaimed yet. */
export function liveState(slot: Slot | undefined, now: number): unknown {
  return slot !== undefined && slot.expiresAt > now ? slot.state : undefined;
}
