/**
 * Plans and tiers: named rule lists, and the request header that picks one (an API key mapped
 * to a plan, kept only as a SHA-256 digest, or the plan's name itself).
 */
import { createHash } from 'node:crypto';
import type { Criticality, RuleOptions } from '../../index.js';
import { resolveRules } from '../../internal.js';
import { parsePriority } from './adaptive.js';
import {
  booleanAt,
  core,
  type Fields,
  fail,
  HEADER_NAME,
  join,
  type Labels,
  objectAt,
  oneOf,
  stringAt,
} from './check.js';
import { checkLeasing, checkShadow, concurrencyRule, parseRuleList } from './rules.js';

/** The core's rule for plan names (src/core/plans.ts): no dots, since rules are shown as `<plan>.<rule>`. */
const PLAN_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** The plan of a config without tiers. */
export const DEFAULT_PLAN = 'default';

export interface Tiers {
  /** The request header that identifies the tenant (lower case). */
  readonly header: string;
  /** SHA-256 (hex) of a header value → plan; without it, the header's value is the plan name. */
  readonly keys: ReadonlyMap<string, string> | undefined;
  /** `'keys'`: plans of listed API keys; `'header'`: any client names its own plan (declared explicitly). */
  readonly trust: 'keys' | 'header';
  readonly default: string;
}

/**
 * The plans of a config: its `plans`, or one `default` plan of its `rules` (default 60/1m). A
 * plan is a rule list, or `{ rules?, concurrency?, shadow? }`; the top-level `concurrency` applies
 * to every plan that sets none of its own.
 */
export function parsePlans(raw: Fields, labels: Labels): Map<string, RuleOptions[]> {
  const plans = parsePlanRules(raw, labels);
  if (raw.concurrency !== undefined) {
    const where = labels.concurrency ?? 'concurrency';
    const shared = concurrencyRule(raw.concurrency, where);
    for (const [name, rules] of plans) {
      if (rules.some((rule) => rule.algorithm === 'concurrency')) continue;
      const combined = [...rules, shared];
      const at = plans.size > 1 ? `${where} (plan ${name})` : where;
      core(() => resolveRules(combined, at));
      checkLeasing(combined, at);
      plans.set(name, combined);
    }
  }
  return plans;
}

/** A plan written as `{ rules?, concurrency?, shadow?, priority? }` rather than a rule list. */
function isPlanObject(value: unknown): value is Fields {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    ('concurrency' in value || 'rules' in value || 'shadow' in value || 'priority' in value)
  );
}

/** Each plan's `priority`: the criticality of its requests under an adaptive limit. */
export function parsePlanPriorities(raw: Fields): Map<string, Criticality> {
  const priorities = new Map<string, Criticality>();
  if (typeof raw.plans !== 'object' || raw.plans === null) return priorities;
  for (const [name, plan] of Object.entries(raw.plans)) {
    if (!isPlanObject(plan)) continue;
    const priority = parsePriority(plan.priority, join(join('plans', name), 'priority'));
    if (priority !== undefined) priorities.set(name, priority);
  }
  return priorities;
}

function parsePlan(value: unknown, path: string): RuleOptions[] {
  if (!isPlanObject(value)) return parseRuleList(value, path);
  const fields = objectAt(value, path, ['rules', 'concurrency', 'shadow', 'priority']);
  const rules = fields.rules === undefined ? [] : parseRuleList(fields.rules, join(path, 'rules'));
  if (fields.concurrency !== undefined)
    rules.push(concurrencyRule(fields.concurrency, join(path, 'concurrency')));
  if (rules.length === 0) fail(path, 'give rules or concurrency');
  // A shadow plan's own rules are evaluated and counted, never enforced (a roll-out of the plan).
  const shadow = fields.shadow === undefined ? false : booleanAt(fields.shadow, join(path, 'shadow'));
  if (shadow) checkShadow(rules, join(path, 'shadow'), "the plan's rules");
  const planRules = shadow ? rules.map((rule) => ({ ...rule, shadow: true })) : rules;
  core(() => resolveRules(planRules, path));
  checkLeasing(planRules, path);
  return planRules;
}

function parsePlanRules(raw: Fields, labels: Labels): Map<string, RuleOptions[]> {
  const plans = new Map<string, RuleOptions[]>();
  if (raw.plans !== undefined) {
    if (raw.rules !== undefined)
      fail(labels.rules ?? 'rules', 'with plans, give each plan its rules instead');
    const fields = objectAt(raw.plans, 'plans', Object.keys(raw.plans ?? {}));
    for (const [name, rules] of Object.entries(fields)) {
      const path = join('plans', name);
      if (!PLAN_NAME.test(name) || name === 'override') {
        fail(
          path,
          "plan name must be 1-64 letters, digits, _ or - (starting with a letter or digit), not 'override'",
        );
      }
      plans.set(name, parsePlan(rules, path));
    }
    if (plans.size === 0) fail('plans', 'define at least one plan, e.g. free: [60/1m]');
  } else {
    const rules = raw.rules ?? [{ limit: '60/1m' }];
    plans.set(DEFAULT_PLAN, parseRuleList(rules, labels.rules ?? 'rules'));
  }
  return plans;
}

export function parseTiers(value: unknown, plans: ReadonlyMap<string, unknown>): Tiers {
  const fields = objectAt(value, 'tiers', ['header', 'keys', 'default', 'trust']);
  const header = stringAt(fields.header, 'tiers.header', HEADER_NAME, 'is not a header name').toLowerCase();
  const planNames = [...plans.keys()];
  const fallback = oneOf(fields.default, 'tiers.default', planNames);
  let keys: Map<string, string> | undefined;
  if (fields.keys !== undefined) {
    const entries = Object.entries(objectAt(fields.keys, 'tiers.keys', Object.keys(fields.keys ?? {})));
    keys = new Map();
    for (const [index, [key, plan]] of entries.entries()) {
      // Never echo a key: it may be a live API key.
      const path = `tiers.keys (entry ${index + 1})`;
      oneOf(plan, path, planNames);
      const digest = /^sha256:[0-9a-f]{64}$/i.test(key) ? key.slice(7).toLowerCase() : sha256Hex(key);
      keys.set(digest, plan as string);
    }
  }
  if (fields.trust !== undefined) oneOf(fields.trust, 'tiers.trust', ['header']);
  if (keys === undefined && fields.trust === undefined) {
    fail(
      'tiers',
      `without keys, any client picks its plan by sending ${header}: <plan>; list the API keys in tiers.keys, or declare trust: header if that is intended`,
    );
  }
  if (keys !== undefined && fields.trust !== undefined) {
    fail('tiers.trust', 'header is for tiers without keys; with tiers.keys only listed keys choose a plan');
  }
  return { header, keys, default: fallback, trust: keys === undefined ? 'header' : 'keys' };
}

/** SHA-256 hex, how API keys are compared with `tiers.keys` without keeping them in clear. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}
