/**
 * Decision → rate-limit response headers, one serializer per header style, so a new draft is a
 * new entry here and nothing else changes. A policy announces a rule's sustained rate (`limit`
 * per window); a token-bucket or gcra capacity that differs from it is the parameter `burst`,
 * while the remaining fields count against that capacity, which is what is really left.
 *
 * - `draft-6`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` of the binding rule
 *   and `RateLimit-Policy: 10;w=1, 120;w=60` (draft-ietf-httpapi-ratelimit-headers-06).
 * - `draft-10`: `RateLimit-Policy: "minute";q=120;w=60` and `RateLimit: "minute";r=5;t=30`, one
 *   list item per rule (drafts 08-11).
 * - `legacy`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (seconds from now).
 *
 * Times are whole seconds rounded up. A reset is never more than the rule's window (sliding
 * windows and buckets can take longer to drain fully); for a rule that denied, it is the time
 * until this request could pass, so `Retry-After` is never earlier than the reset.
 *
 * Two limiters on one response: list fields get the later limiter's items appended, so every
 * policy stays readable; the single-valued fields keep the more restrictive decision (a denial,
 * else the lower remaining; on a tie, the later one).
 */
import type { Decision, RuleDecision } from '../core/decision.js';
import { MAX_SF_INTEGER, sfInteger, sfItem, sfList } from './structured.js';

export type HeaderStyle = 'draft-6' | 'draft-10' | 'legacy';
export const HEADER_STYLES: readonly HeaderStyle[] = ['draft-6', 'draft-10', 'legacy'];

/** A field name (RFC 9110 token), as options naming a header must give one. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Where headers go: each adapter wraps its response object in these two calls. */
export interface HeaderTarget {
  /** The header's current value (several values joined by `, `), or `undefined`. */
  get(name: string): string | undefined;
  set(name: string, value: string): void;
}

/** Whole seconds, rounded up, clamped to what a Structured Field Integer holds. */
function seconds(ms: number): number {
  return Math.min(MAX_SF_INTEGER, Math.ceil(ms / 1000));
}

/** A rule's window in whole seconds; windows under a second count as 1 (`w` must be non-zero). */
export function windowSeconds(view: RuleDecision): number {
  return Math.max(1, seconds(view.windowMs));
}

/**
 * Seconds until the rule resets, never more than its window: for a rule that denied, until this
 * request could pass; otherwise until the quota is fully restored.
 */
export function resetSeconds(view: RuleDecision): number {
  const waitMs = !view.allowed && Number.isFinite(view.retryAfterMs) ? view.retryAfterMs : view.resetMs;
  return Math.min(windowSeconds(view), seconds(waitMs));
}

/** `Retry-After` in whole seconds (at least 1), or `undefined` when the request can never pass. */
export function retryAfterSeconds(decision: Decision): number | undefined {
  if (decision.allowed || !Number.isFinite(decision.retryAfterMs)) return undefined;
  return Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
}

/**
 * A policy's parameters after its quota: the window, and `burst` when the rule's capacity is not
 * its sustained limit, so the quota announced is the rate a client can keep up.
 */
function policyParameters(view: RuleDecision): [string, number][] {
  const window: [string, number] = ['w', windowSeconds(view)];
  return view.quota === undefined ? [window] : [window, ['burst', view.limit]];
}

/** What the fields say of one rule whatever its counts: formatted once per rule, not per response. */
interface RuleText {
  readonly limit: number;
  readonly windowMs: number;
  readonly quota: number | undefined;
  /** The rule's name as a String: `"minute"`. */
  readonly name: string;
  /** Its draft-6 policy item: `120;w=60`. */
  readonly policy6: string;
  /** Its draft-10 policy item: `"minute";q=120;w=60`. */
  readonly policy10: string;
}

/** Rule names seen are few (they come from configuration); past this many the memo starts over. */
const MAX_RULE_TEXTS = 256;
const ruleTexts = new Map<string, RuleText>();

function ruleText(view: RuleDecision): RuleText {
  const known = ruleTexts.get(view.rule);
  if (
    known !== undefined &&
    known.limit === view.limit &&
    known.windowMs === view.windowMs &&
    known.quota === view.quota
  )
    return known;
  const quota = view.quota ?? view.limit;
  const text: RuleText = {
    limit: view.limit,
    windowMs: view.windowMs,
    quota: view.quota,
    name: sfItem(view.rule),
    policy6: sfItem(quota, policyParameters(view)),
    policy10: sfItem(view.rule, [['q', quota], ...policyParameters(view)]),
  };
  if (ruleTexts.size >= MAX_RULE_TEXTS) ruleTexts.clear();
  ruleTexts.set(view.rule, text);
  return text;
}

/** A list field with one item per rule, as `item` formats it. */
function perRule(rules: readonly RuleDecision[], item: (view: RuleDecision) => string): string {
  // One rule, the usual case, without the array and join of a list.
  return rules.length === 1 ? item(rules[0] as RuleDecision) : sfList(rules.map(item));
}

const policy6 = (view: RuleDecision) => ruleText(view).policy6;
const policy10 = (view: RuleDecision) => ruleText(view).policy10;
const remaining10 = (view: RuleDecision) =>
  `${ruleText(view).name};r=${sfInteger(view.remaining)};t=${sfInteger(resetSeconds(view))}`;

type FieldMode = 'list' | 'binding';

/** A header style: its fields (names and modes, fixed) and their values for one decision, in that order. */
interface Style {
  readonly fields: readonly (readonly [name: string, mode: FieldMode])[];
  /** The remaining-field of its binding group, used to compare two limiters' decisions. */
  readonly remainingField: string | undefined;
  values(decision: Decision): string[];
}

const STYLES: Record<HeaderStyle, Style> = {
  'draft-6': {
    fields: [
      ['RateLimit-Limit', 'binding'],
      ['RateLimit-Remaining', 'binding'],
      ['RateLimit-Reset', 'binding'],
      ['RateLimit-Policy', 'list'],
    ],
    remainingField: 'RateLimit-Remaining',
    values: (decision) => [
      sfInteger(decision.limit),
      sfInteger(decision.remaining),
      sfInteger(resetSeconds(decision)),
      perRule(decision.rules, policy6),
    ],
  },
  'draft-10': {
    fields: [
      ['RateLimit-Policy', 'list'],
      ['RateLimit', 'list'],
    ],
    remainingField: undefined,
    values: (decision) => [perRule(decision.rules, policy10), perRule(decision.rules, remaining10)],
  },
  legacy: {
    fields: [
      ['X-RateLimit-Limit', 'binding'],
      ['X-RateLimit-Remaining', 'binding'],
      ['X-RateLimit-Reset', 'binding'],
    ],
    remainingField: 'X-RateLimit-Remaining',
    values: (decision) => [
      sfInteger(decision.limit),
      sfInteger(decision.remaining),
      sfInteger(resetSeconds(decision)),
    ],
  },
};

/**
 * What headers describe: the enforced rules only (a shadow rule is never announced to clients),
 * or undefined when every rule is a shadow rule. The binding rule is always an enforced one.
 */
function enforced(decision: Decision): Decision | undefined {
  if (!decision.rules.some((view) => view.shadow === true)) return decision;
  const rules = decision.rules.filter((view) => view.shadow !== true);
  return rules.length === 0 ? undefined : { ...decision, rules };
}

/** The header fields of `decision` in the given styles, without regard to what is already set. */
export function rateLimitHeaders(decision: Decision, styles: readonly HeaderStyle[]): [string, string][] {
  const shown = enforced(decision);
  if (shown === undefined) return [];
  return styles.flatMap((style) => {
    const { fields, values } = STYLES[style];
    const texts = values(shown);
    return fields.map(([name], i): [string, string] => [name, texts[i] as string]);
  });
}

/** Writes `decision`'s rate-limit headers, merging with those an earlier limiter wrote. */
export function writeRateLimitHeaders(
  target: HeaderTarget,
  decision: Decision,
  styles: readonly HeaderStyle[],
): void {
  const shown = enforced(decision);
  if (shown === undefined) return;
  for (const style of styles) {
    const { fields, remainingField, values } = STYLES[style];
    const earlier = remainingField === undefined ? undefined : target.get(remainingField);
    // `!(a > b)` rather than `a <= b`: a value that is not a number never wins over ours.
    const bindingWins = !shown.allowed || earlier === undefined || !(shown.remaining > Number(earlier));
    const texts = values(shown);
    for (let i = 0; i < fields.length; i++) {
      const [name, mode] = fields[i] as (typeof fields)[number];
      const value = texts[i] as string;
      if (mode === 'list') {
        const existing = target.get(name);
        target.set(name, existing === undefined || existing === '' ? value : `${existing}, ${value}`);
      } else if (bindingWins) {
        target.set(name, value);
      }
    }
  }
}

/**
 * Rewrites what `writeRateLimitHeaders` wrote for `before` to show `after` (the same check,
 * settled): this decision's items in the list fields, and the single-valued fields while they
 * still show this decision. What another limiter wrote is left as it is.
 */
export function rewriteRateLimitHeaders(
  target: HeaderTarget,
  before: Decision,
  after: Decision,
  styles: readonly HeaderStyle[],
): void {
  const written = enforced(before);
  const shown = enforced(after);
  if (written === undefined || shown === undefined) return;
  for (const style of styles) {
    const { fields, values } = STYLES[style];
    const old = values(written);
    const next = values(shown);
    const bindingOurs = fields.every(([name, mode], i) => mode === 'list' || target.get(name) === old[i]);
    fields.forEach(([name, mode], i) => {
      const value = old[i] as string;
      const replacement = next[i] as string;
      const current = target.get(name);
      if (replacement === value || current === undefined) return;
      if (mode === 'binding') {
        if (bindingOurs) target.set(name, replacement);
        return;
      }
      const at = memberAt(current, value);
      if (at >= 0) target.set(name, current.slice(0, at) + replacement + current.slice(at + value.length));
    });
  }
}

/** Where `members` (one decision's list items) stand whole in the list `field`, or -1. */
function memberAt(field: string, members: string): number {
  for (let at = field.indexOf(members); at >= 0; at = field.indexOf(members, at + 1)) {
    const end = at + members.length;
    if ((at === 0 || field.startsWith(', ', at - 2)) && (end === field.length || field.startsWith(', ', end)))
      return at;
  }
  return -1;
}

/** Headers of a 429 besides the rate-limit ones: `Retry-After` (when it can ever pass) and `Cache-Control`. */
export function writeDenialHeaders(target: HeaderTarget, decision: Decision): void {
  const retryAfter = retryAfterSeconds(decision);
  if (retryAfter !== undefined) target.set('Retry-After', String(retryAfter));
  target.set('Cache-Control', 'no-store');
}
