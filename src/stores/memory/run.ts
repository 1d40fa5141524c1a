/**
 * One check on the memory store: every rule's step function on its live state and, when all
 * allow and the check consumes, every rule's commit, together (nothing else runs in between).
 */
import type { Evaluation } from '../../algorithms/index.js';
import type { ResolvedRule } from '../../core/types.js';
import type { Chains } from './chains.js';
import { lastOf, liveState, type Slot, slotOf, slotsOf } from './slots.js';

/**
 * Evaluates `rules` under `prefix` on the chain of `encoded` starting at `first` and, if all
 * allow and `consume`, commits them. Returns each rule's evaluation.
 */
export type Run = (
  encoded: string,
  prefix: string,
  first: Slot | undefined,
  rules: readonly ResolvedRule[],
  cost: number,
  consume: boolean,
  now: number,
) => Evaluation[];

export function createRun(chains: Chains): Run {
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
    return chains.write(
      encoded,
      first,
      slot,
      prefix,
      rule.keyTail,
      next,
      now + resetAfterMs,
      last ?? lastOf(first),
    );
  }

  /** The usual case: one rule, its slot found once. */
  function runOne(
    encoded: string,
    prefix: string,
    first: Slot | undefined,
    rule: ResolvedRule,
    cost: number,
    consume: boolean,
    now: number,
  ): Evaluation[] {
    const slot = slotOf(first, prefix, rule.keyTail);
    const state = liveState(slot, now);
    const evaluation = rule.algorithm.evaluate(state, now, cost, rule);
    if (evaluation.allowed && consume) {
      commitRule(encoded, prefix, first, slot, state, rule, cost, now, evaluation.resetAfterMs);
      chains.reclaim(now);
    }
    return [evaluation];
  }

  return function run(encoded, prefix, first, rules, cost, consume, now) {
    const count = rules.length;
    if (count === 1) return runOne(encoded, prefix, first, rules[0] as ResolvedRule, cost, consume, now);
    const outcomes: Evaluation[] = new Array(count);
    const slots = slotsOf(first, prefix, rules);
    let allAllowed = true;
    for (let i = 0; i < count; i++) {
      const rule = rules[i] as ResolvedRule;
      const evaluation = rule.algorithm.evaluate(liveState(slots[i], now), now, cost, rule);
      allAllowed &&= evaluation.allowed;
      outcomes[i] = evaluation;
    }
    if (!allAllowed || !consume) return outcomes;
    let chain = first;
    let last = lastOf(first);
    for (let i = 0; i < count; i++) {
      const rule = rules[i] as ResolvedRule;
      const slot = slots[i];
      const resetAfterMs = (outcomes[i] as Evaluation).resetAfterMs;
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
    chains.reclaim(now);
    return outcomes;
  };
}
