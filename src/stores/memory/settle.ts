/**
 * Changing a key's states after its checks on the memory store's chains: settling a reservation,
 * releasing or renewing concurrency slots, and resetting the key.
 */
import { BLOCK_SUFFIX } from '../../algorithms/block.js';
import type { SettleResult } from '../../algorithms/index.js';
import type { ResolvedRule } from '../../base/types.js';
import type { SlotAction } from '../types.js';
import type { Chains } from './chains.js';
import { lastOf, liveState, type Slot, slotOf, slotsOf } from './slots.js';

/** One rule's change: its new state and ttl, `'delete'`, or undefined (unchanged). */
type Step = (rule: ResolvedRule, state: unknown, now: number, index: number) => SettleResult<unknown>;

/** Applies `step` to each rule's live state under `prefix` in `encoded`'s chain, storing or deleting what it returns. */
function changeSlots(
  chains: Chains,
  encoded: string,
  prefix: string,
  rules: readonly ResolvedRule[],
  now: number,
  step: Step,
): void {
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
      first = chains.write(
        encoded,
        first,
        slot,
        prefix,
        rule.keyTail,
        result.state,
        now + result.ttlMs,
        last,
      );
      if (slot === undefined) last = last === undefined ? first : (last.next as Slot);
    }
  }
  if (first !== undefined && doomed.size > 0) chains.remove(encoded, first, doomed);
  chains.reclaim(now);
}

/**
 * Applies each rule's settlement (see Algorithm.settle) to its slot under `prefix`; a rule that
 * counts requests took 1 whatever the cost, so it keeps it unless the request is refunded.
 */
export function settleSlots(
  chains: Chains,
  encoded: string,
  prefix: string,
  rules: readonly ResolvedRule[],
  reserved: number,
  actual: number,
  tokens: readonly number[],
  now: number,
  refund: boolean,
): void {
  changeSlots(chains, encoded, prefix, rules, now, (rule, state, at, i) => {
    const token = tokens[i] as number;
    if (rule.counts === 'cost') return rule.algorithm.settle(state, at, { token, reserved, actual }, rule);
    return refund ? rule.algorithm.settle(state, at, { token, reserved: 1, actual: 0 }, rule) : undefined;
  });
}

/** Releases or renews a request's concurrency slots (see Algorithm.slots); returns how many were held. */
export function changeConcurrencySlots(
  chains: Chains,
  encoded: string,
  prefix: string,
  rules: readonly ResolvedRule[],
  tokens: readonly number[],
  action: SlotAction,
  now: number,
): number {
  let touched = 0;
  changeSlots(chains, encoded, prefix, rules, now, (rule, state, at, i) => {
    const change = rule.algorithm.slots?.[action](state, at, tokens[i] as number, rule);
    touched += change?.slots ?? 0;
    return change?.result;
  });
  return touched;
}

/**
 * Forgets the states of `rules` under `prefix` in `encoded`'s chain; a concurrency rule keeps
 * its last slot id (see Algorithm.slots.reset).
 */
export function resetSlots(
  chains: Chains,
  encoded: string,
  prefix: string,
  rules: readonly ResolvedRule[],
  now: number,
): void {
  if (chains.get(encoded) === undefined) return;
  changeSlots(chains, encoded, prefix, rules, now, (rule, state, at) =>
    rule.algorithm.slots === undefined ? 'delete' : rule.algorithm.slots.reset(state, at),
  );
  // Blocks live in slots of their own beside the rules' (see algorithms/block.ts).
  const first = chains.get(encoded);
  if (first === undefined) return;
  const doomed = new Set<Slot>();
  for (const rule of rules) {
    const block = rule.block === undefined ? undefined : slotOf(first, prefix, rule.keyTail + BLOCK_SUFFIX);
    if (block !== undefined) doomed.add(block);
  }
  if (doomed.size > 0) chains.remove(encoded, first, doomed);
}
