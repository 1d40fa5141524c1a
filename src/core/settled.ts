/**
 * A decision as it will read once settled: what the HTTP adapters show in a response's
 * rate-limit headers when the response's head already tells how its check will be settled
 * (given back, or charged its actual cost), so the headers do not report the reservation.
 */
import { ruleCost } from '../base/types.js';
import { type Decision, type RuleDecision, ticketOf, withRules } from './decision.js';
import type { Ticket } from './settle.js';

/** How a check will be settled: given back whole (`refund`), or settled to an `actual` cost. */
export type Settling = { readonly refund: true } | { readonly actual: number };

/**
 * `decision` as `settling` will leave it, or undefined when it changes nothing shown (a denial,
 * a fail-open answer, a decision no check reserved for). Each rule that took its units shows
 * them back (a refund) or `actual − reserved` more taken (a settle, `counts: 'cost'` rules
 * only), within [0, limit]; concurrency rules and every rule's reset time stay as they were.
 * The binding rule is chosen again as `decide` chooses it: the least remaining, among the
 * enforced rules when there are any.
 */
export function settledDecision(decision: Decision, settling: Settling): Decision | undefined {
  if (!decision.allowed) return undefined;
  const ticket = ticketOf(decision) as Ticket | undefined;
  if (ticket === undefined || ticket.where === undefined) return undefined;
  let changed = false;
  const views = decision.rules.map((view) => {
    // A ticket leaves out the rules that took nothing (a shadow rule that would have denied).
    const rule = ticket.rules.find((candidate) => candidate.name === view.rule);
    if (rule === undefined || rule.algorithm.slots !== undefined) return view;
    const taken =
      'refund' in settling
        ? -ruleCost(rule, ticket.reserved)
        : rule.counts === 'cost'
          ? settling.actual - ticket.reserved
          : 0;
    const remaining = Math.min(view.limit, Math.max(0, view.remaining - taken));
    if (remaining === view.remaining) return view;
    changed = true;
    return { ...view, remaining };
  });
  if (!changed) return undefined;
  const enforced = views.some((view) => view.shadow !== true);
  let binding: RuleDecision | undefined;
  for (const view of views) {
    if (enforced && view.shadow === true) continue;
    if (binding === undefined || view.remaining < binding.remaining) binding = view;
  }
  // Only shadow rules: the top level shows the tightest of them, as allowed (as decide does).
  const bound = binding as RuleDecision;
  const shown = bound.allowed ? bound : { ...bound, allowed: true, retryAfterMs: 0 };
  const settled = withRules(shown, true, views, decision.degraded, decision.shadowDenied);
  if (decision.plan !== undefined) settled.plan = decision.plan;
  return settled;
}
