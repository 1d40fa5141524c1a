/** Settling a reservation and resetting a key on the memory store's chains. */
import { BLOCK_SUFFIX } from '../../algorithms/block.js';
import type { ResolvedRule } from '../../core/types.js';
import type { Chains } from './chains.js';
import { lastOf, liveState, type Slot, slotOf, slotsOf } from './slots.js';

/** Applies each rule's settlement (see Algorithm.settle) to its slot under `prefix`. */
export function settleSlots(
  chains: Chains,
  encoded: string,
  prefix: string,
  rules: readonly ResolvedRule[],
  reserved: number,
  actual: number,
  tokens: readonly number[],
  now: number,
): void {
  let first = chains.get(encoded);
  let last = lastOf(first);
  const slots = slotsOf(first, prefix, rules);
  const doomed = new Set<Slot>();
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as ResolvedRule;
    const slot = slots[i];
    const settlement = { token: tokens[i] as number, reserved, actual };
    const result = rule.algorithm.settle(liveState(slot, now), now, settlement, rule);
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

/** Forgets the slots of `rules` under `prefix` in `encoded`'s chain. */
export function resetSlots(
  chains: Chains,
  encoded: string,
  prefix: string,
  rules: readonly ResolvedRule[],
): void {
  const first = chains.get(encoded);
  if (first === undefined) return;
  const doomed = new Set<Slot>();
  for (const slot of slotsOf(first, prefix, rules)) if (slot !== undefined) doomed.add(slot);
  for (const rule of rules) {
    const block = rule.block === undefined ? undefined : slotOf(first, prefix, rule.keyTail + BLOCK_SUFFIX);
    if (block !== undefined) doomed.add(block);
  }
  chains.remove(encoded, first, doomed);
}
