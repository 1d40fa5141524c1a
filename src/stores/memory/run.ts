/**
 * One check on the memory store: every rule's step function on its live state and, when all
 * enforced rules allow and the check consumes, the commit of every rule that allowed, together
 * (nothing else runs in between).
 */
import { applyBlock, BLOCK_SUFFIX, type BlockParams, type BlockState } from '../../algorithms/block.js';
import type { Evaluation } from '../../algorithms/index.js';
import { type ResolvedRule, ruleCost } from '../../base/types.js';
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
   * `evaluation` under the rule's block, kept in its own slot beside the rule's (see
   * algorithms/block.ts); a new block is written at once. Returns the evaluation and the chain's
   * first slot.
   */
  function blockRule(
    encoded: string,
    prefix: string,
    first: Slot | undefined,
    rule: ResolvedRule,
    block: BlockParams,
    evaluation: Evaluation,
    consume: boolean,
    now: number,
  ): [Evaluation, Slot | undefined] {
    const tail = rule.keyTail + BLOCK_SUFFIX;
    const slot = slotOf(first, prefix, tail);
    const blocked = applyBlock(
      liveState(slot, now) as BlockState | undefined,
      now,
      evaluation,
      block,
      consume,
    );
    const next = blocked.next;
    if (next === undefined) return [blocked.evaluation, first];
    return [
      blocked.evaluation,
      chains.write(encoded, first, slot, prefix, tail, next, next.end + block.forgetMs),
    ];
  }

  /**
   * Commits `rule`'s `units` (its share of the check's cost, see ruleCost) to `slot` (found in
   * the chain starting at `first`, or none; `state` is its live state), the new state lasting
   * `resetAfterMs`. Returns the chain's first slot.
   */
  function commitRule(
    encoded: string,
    prefix: string,
    first: Slot | undefined,
    slot: Slot | undefined,
    state: unknown,
    rule: ResolvedRule,
    units: number,
    now: number,
    resetAfterMs: number,
    last?: Slot,
  ): Slot {
    // An expired state, for the algorithm to overwrite rather than allocate one (see Algorithm.commit).
    const spare = state === undefined ? slot?.state : undefined;
    const next = rule.algorithm.commit(state, now, units, rule, spare);
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
    const units = ruleCost(rule, cost);
    let evaluation = rule.algorithm.evaluate(state, now, units, rule);
    if (rule.block !== undefined) {
      [evaluation, first] = blockRule(encoded, prefix, first, rule, rule.block, evaluation, consume, now);
      chains.reclaim(now);
    }
    if (evaluation.allowed && consume) {
      commitRule(encoded, prefix, first, slot, state, rule, units, now, evaluation.resetAfterMs);
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
    let chain = first;
    for (let i = 0; i < count; i++) {
      const rule = rules[i] as ResolvedRule;
      let evaluation = rule.algorithm.evaluate(liveState(slots[i], now), now, ruleCost(rule, cost), rule);
      if (rule.block !== undefined) {
        [evaluation, chain] = blockRule(encoded, prefix, chain, rule, rule.block, evaluation, consume, now);
      }
      // A shadow rule never stops the others; it is consumed only when it allows, as if enforced.
      allAllowed &&= evaluation.allowed || rule.shadow;
      outcomes[i] = evaluation;
    }
    if (!allAllowed || !consume) {
      if (chain !== first) chains.reclaim(now);
      return outcomes;
    }
    let last = lastOf(chain);
    for (let i = 0; i < count; i++) {
      const rule = rules[i] as ResolvedRule;
      if (!(outcomes[i] as Evaluation).allowed) continue;
      const slot = slots[i];
      const resetAfterMs = (outcomes[i] as Evaluation).resetAfterMs;
      chain = commitRule(
        encoded,
        prefix,
        chain,
        slot,
        liveState(slot, now),
        rule,
        ruleCost(rule, cost),
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
