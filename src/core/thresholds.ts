/**
 * Threshold events: a calendar rule with `thresholds` says, per check, which of them the check
 * crosses if it is consumed (decided inside the store's atomic step, see
 * algorithms/calendar-window.ts, so two processes never both announce one). A consumed check
 * announces each here.
 */
import type { ResolvedRule } from '../base/types.js';
import type { RuleOutcome } from '../stores/types.js';

/** The `threshold` event: `key`'s usage of `rule` reached `threshold` × `limit` in the period ending at `periodEnd`. */
export interface ThresholdEvent {
  readonly key: string;
  /** The rule's name as decisions show it (`<plan>.<rule>` under plans). */
  readonly rule: string;
  /** The fraction reached, as the rule gives it. */
  readonly threshold: number;
  /** Units used in the period right after the check that crossed it. */
  readonly used: number;
  readonly limit: number;
  /** The end of the period, epoch ms (on the store's clock). */
  readonly periodEnd: number;
}

/**
 * Announces the thresholds each rule's outcome crosses, for a check that was consumed: every
 * rule that allowed it committed (`units`: each rule's share of the check's cost).
 */
export function announceCrossings(
  key: string,
  rules: readonly ResolvedRule[],
  outcomes: readonly RuleOutcome[],
  units: (rule: ResolvedRule) => number,
  announce: (event: ThresholdEvent) => void,
): void {
  for (let i = 0; i < rules.length; i++) {
    const outcome = outcomes[i] as RuleOutcome;
    const crossed = outcome.crossed ?? 0;
    if (crossed === 0 || !outcome.allowed) continue;
    const rule = rules[i] as ResolvedRule;
    const { thresholds, periods, limit } = rule;
    if (thresholds === undefined || periods === undefined) continue;
    // remaining is limit - count before the check: an allowed check never starts in debt.
    const used = limit - outcome.remaining + units(rule);
    const periodEnd = periods.at(outcome.token).end;
    thresholds.forEach((threshold, bit) => {
      if (Math.floor(crossed / 2 ** bit) % 2 === 1)
        announce({ key, rule: rule.name, threshold, used, limit, periodEnd });
    });
  }
}
