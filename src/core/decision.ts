/**
 * Decisions: turning the per-rule outcomes a store returns into the plain `Decision` users see.
 * This is the only place where the all-or-nothing view across rules is composed.
 */
import { NEVER } from '../algorithms/index.js';
import { type Degraded, type ResolvedRule, ruleCost } from '../base/types.js';
import type { RuleOutcome } from '../stores/types.js';

/** What one rule says about one request. */
export interface RuleDecision {
  /** The rule's name. */
  rule: string;
  /** Whether this rule alone would admit the request. */
  allowed: boolean;
  /** The most units that can be available at once: `limit`, or `burst` for token-bucket and gcra. */
  limit: number;
  /** The rule's window in milliseconds. */
  windowMs: number;
  /**
   * The rule's sustained `limit` per window, present only when it differs from `limit` above
   * (a token-bucket or gcra rule whose `burst` is not its limit).
   */
  quota?: number;
  /** Units still available after this decision (an integer >= 0). */
  remaining: number;
  /** Milliseconds until the quota is fully restored if nothing else arrives. */
  resetMs: number;
  /**
   * 0 when allowed; otherwise milliseconds until the same request (same cost) would be allowed,
   * or `Infinity` when its cost exceeds the rule's capacity and it can never be allowed. For a
   * concurrency rule: until enough slots are certain to be free because their leases run out;
   * slots given back by `release` free up sooner.
   */
  retryAfterMs: number;
  /** Present (`true`) on a shadow rule's view: it is reported, never enforced. */
  shadow?: true;
  /**
   * Present (`true`) when the key is blocked: this rule has a `block` and denied a check, which
   * starts or holds a block period, or an override blocks the key. On the decision: its binding
   * rule's, when denied.
   */
  blocked?: true;
  /** Concurrency rules only: slots in use after this decision (a peek's own are not counted). */
  inFlight?: number;
}

/**
 * The answer to one check: plain data, never an exception. The top-level numbers are those of
 * the binding rule (`rule`): the one that denied (the longest wait if several did), else the
 * one with the least remaining.
 */
export interface Decision extends RuleDecision {
  /** Every rule's view, in the order the rules were given. */
  rules: RuleDecision[];
  /**
   * `false` when the store decided. Otherwise why it could not, and the decision is the
   * `onStoreError` policy's: `'timeout'` (no answer within `timeout`), `'unavailable'` (circuit
   * open after repeated failures, store not called), `'error'` (the store failed).
   */
  degraded: Degraded;
  /** The plan whose rules applied (see `plans`), or undefined for `rules` and rule overrides. */
  plan?: string;
  /** Names of the shadow rules that would have denied this check (empty when none did). */
  shadowDenied: string[];
}

const NONE_DENIED: string[] = Object.freeze([]) as unknown as string[];

/** Composes a decision from one outcome per rule (their tokens are for `settle`, not shown here). */
export function decide(
  rules: readonly ResolvedRule[],
  outcomes: readonly RuleOutcome[],
  cost: number,
  degraded: Degraded = false,
  plan?: string,
  consume = true,
): Decision {
  let decision: Decision;
  if (rules.length === 1 && !(rules[0] as ResolvedRule).shadow) {
    // The usual case, spared the search for the binding rule (and a holey array of views).
    const outcome = outcomes[0] as RuleOutcome;
    const only = viewOf(rules[0] as ResolvedRule, outcome, outcome.allowed, cost, consume);
    decision = withRules(only, only.allowed, [only], degraded);
  } else {
    // Shadow rules never deny: only enforced rules decide, and bind when there are any.
    let allowed = true;
    let enforced = false;
    let shadowDenied = NONE_DENIED;
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i] as ResolvedRule;
      if (!rule.shadow) {
        enforced = true;
        if (!(outcomes[i] as RuleOutcome).allowed) allowed = false;
      } else if (!(outcomes[i] as RuleOutcome).allowed) {
        shadowDenied = shadowDenied === NONE_DENIED ? [rule.name] : [...shadowDenied, rule.name];
      }
    }
    const views: RuleDecision[] = new Array(rules.length);
    let binding = -1;
    for (let i = 0; i < rules.length; i++) {
      views[i] = viewOf(rules[i] as ResolvedRule, outcomes[i] as RuleOutcome, allowed, cost, consume);
      if (enforced && (rules[i] as ResolvedRule).shadow) continue;
      const candidate = views[i] as RuleDecision;
      const current = views[binding];
      if (
        current === undefined ||
        (allowed ? candidate.remaining < current.remaining : candidate.retryAfterMs > current.retryAfterMs)
      )
        binding = i;
    }
    if (!allowed && (views[binding] as RuleDecision).allowed) {
      binding = views.findIndex((view, i) => !view.allowed && !(rules[i] as ResolvedRule).shadow);
    }
    let bound = views[binding] as RuleDecision;
    // Only shadow rules: the top level shows the tightest of them, as allowed.
    if (!enforced && !bound.allowed) bound = { ...bound, allowed: true, retryAfterMs: 0 };
    decision = withRules(bound, allowed, views, degraded, shadowDenied);
  }
  if (plan !== undefined) decision.plan = plan;
  return decision;
}

/**
 * One rule's view, from its outcome; `allowed`: whether every rule allowed; `consume`: a check
 * (not a peek), which took its units (its own share of `cost`, see ruleCost) if allowed.
 */
function viewOf(
  rule: ResolvedRule,
  outcome: RuleOutcome,
  allowed: boolean,
  cost: number,
  consume: boolean,
): RuleDecision {
  const ruleAllowed = outcome.allowed;
  const retry = outcome.retryAfterMs;
  const units = ruleCost(rule, cost);
  const view: RuleDecision = {
    rule: rule.name,
    allowed: ruleAllowed,
    limit: rule.capacity,
    windowMs: rule.windowMs,
    // When every enforced rule allows, the request was consumed (by each rule that allowed it):
    // show the state after it.
    remaining: allowed && ruleAllowed ? Math.max(0, outcome.remaining - units) : outcome.remaining,
    resetMs: allowed && ruleAllowed ? outcome.resetAfterMs : outcome.resetMs,
    retryAfterMs: ruleAllowed ? 0 : retry === NEVER ? Number.POSITIVE_INFINITY : retry,
  };
  if (rule.capacity !== rule.limit) view.quota = rule.limit;
  if (rule.shadow) view.shadow = true;
  // A consuming denial by a rule with a block always starts or holds one (a never-admissible cost aside).
  if (rule.block !== undefined && !ruleAllowed && consume && retry !== NEVER) view.blocked = true;
  // Slots in use: those held before, plus this request's own if it took them.
  if (rule.algorithm.slots !== undefined) {
    view.inFlight = rule.capacity - outcome.remaining + (allowed && ruleAllowed && consume ? units : 0);
  }
  return view;
}

/**
 * Decisions are instances of this class only so that a check can leave its settle ticket in a
 * private field: invisible to JSON, spreads, equality checks and users, and far cheaper than a
 * WeakMap entry per admitted request. Every visible field is plain data.
 */
class CheckedDecision implements Decision {
  rule: string;
  allowed: boolean;
  limit: number;
  windowMs: number;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
  rules: RuleDecision[];
  degraded: Degraded;
  declare plan?: string;
  declare quota?: number;
  shadowDenied: string[];
  declare inFlight?: number;
  declare blocked?: true;
  #ticket: unknown;

  constructor(
    binding: RuleDecision,
    allowed: boolean,
    rules: RuleDecision[],
    degraded: Degraded,
    shadowDenied: string[],
  ) {
    this.rule = binding.rule;
    this.allowed = allowed;
    this.limit = binding.limit;
    this.windowMs = binding.windowMs;
    this.remaining = binding.remaining;
    this.resetMs = binding.resetMs;
    this.retryAfterMs = binding.retryAfterMs;
    if (binding.quota !== undefined) this.quota = binding.quota;
    if (binding.inFlight !== undefined) this.inFlight = binding.inFlight;
    if (binding.blocked === true && !allowed) this.blocked = true;
    this.rules = rules;
    this.degraded = degraded;
    this.shadowDenied = shadowDenied;
  }

  static attach(decision: Decision, ticket: unknown): void {
    if (decision instanceof CheckedDecision) decision.#ticket = ticket;
  }

  static ticketOf(decision: unknown): unknown {
    return decision instanceof CheckedDecision ? decision.#ticket : undefined;
  }
}

/**
 * The decision for a binding rule's view. Written out field by field: an object spread that
 * then redefines one of the spread fields takes V8's slow path.
 */
export function withRules(
  binding: RuleDecision,
  allowed: boolean,
  rules: RuleDecision[],
  degraded: Degraded,
  shadowDenied: string[] = NONE_DENIED,
): Decision {
  return new CheckedDecision(binding, allowed, rules, degraded, shadowDenied);
}

/** Leaves a value with a decision made by `decide`/`withRules`, for `ticketOf` to return later. */
export const attachTicket: (decision: Decision, ticket: unknown) => void = CheckedDecision.attach;
/** What `attachTicket` left with a decision; undefined for any other object (a copy, say). */
export const ticketOf: (decision: unknown) => unknown = CheckedDecision.ticketOf;
