/** What a check answers when its store call failed: the onStoreError policy's answer. */
import type { Degraded, ResolvedRule } from '../base/types.js';
import type { RuleOutcome } from '../stores/types.js';
import type { Shard } from './shards.js';
import type { StoreCallResult, StoreErrorPolicy } from './types.js';

export type PolicyAnswer = (
  reason: Exclude<Degraded, false>,
  shard: Shard,
  head: string,
  rules: readonly ResolvedRule[],
  cost: number,
  consume: boolean,
) => Promise<StoreCallResult>;

export function createPolicyAnswer(
  policy: StoreErrorPolicy,
  timeoutMs: number,
  clock: () => number,
): PolicyAnswer {
  return async function answerByPolicy(reason, shard, head, rules, cost, consume) {
    if (typeof policy === 'object') {
      return { reply: await policy.evaluate(head, rules, cost, consume), degraded: reason };
    }
    const waitMs = Math.max(1, shard.breaker?.retryInMs(clock()) ?? 0, timeoutMs);
    // 'open' admits as if the key were fresh; 'closed' denies with a wait until the next probe.
    const outcomes = rules.map(
      (rule): RuleOutcome =>
        policy === 'open'
          ? {
              allowed: true,
              remaining: rule.capacity,
              resetMs: 0,
              retryAfterMs: 0,
              resetAfterMs: 0,
              token: 0,
            }
          : {
              allowed: false,
              remaining: 0,
              resetMs: waitMs,
              retryAfterMs: waitMs,
              resetAfterMs: waitMs,
              token: 0,
            },
    );
    return { reply: { outcomes }, degraded: reason };
  };
}
