/**
 * Plans: named rule sets (`free`, `pro`, ...) a limiter picks from per check. Each plan's rules
 * are resolved once, at construction. A plan's rules are shown as `<plan>.<rule>` (decisions,
 * headers) but keep their plain name in store keys, so a tenant's usage carries over when its
 * plan changes. A limiter built with `rules` is one unnamed rule set.
 */

import type { ResolvedRule } from '../base/types.js';
import { describe } from '../describe.js';
import { type RuleOptions, resolveRules } from '../rules.js';

/** The rules one check runs, and the plan they came from (undefined for `rules` and overrides). */
export interface RuleSet {
  readonly plan: string | undefined;
  readonly rules: readonly ResolvedRule[];
  /**
   * The smallest capacity among the rules that count cost (a cost above it can never pass);
   * `Infinity` when every rule counts requests (each takes 1, whatever the cost).
   */
  readonly smallestCapacity: number;
  /** Whether some rule counts cost: otherwise every check takes 1 from each rule, whatever its cost. */
  readonly countsCost: boolean;
  /** Whether some rule holds slots until released (concurrency): its checks must be released. */
  readonly holdsSlots: boolean;
  /** Whether its rules lease quota (`quotaLease`): decided here once, so a check tests one flag. */
  readonly leased: boolean;
  /** Whether some rule has `thresholds`: only then does a consumed check look for crossings. */
  readonly thresholds: boolean;
}

export interface Plans {
  /** The plan names, in the order given; empty for a limiter built with `rules`. */
  readonly names: readonly string[];
  readonly defaultPlan: string | undefined;
  /** Every rule set (one per plan, or the single unnamed one). */
  readonly sets: readonly RuleSet[];
  /** Every distinct stored rule (by key), across plans: what `reset` deletes. */
  readonly stored: readonly ResolvedRule[];
  /** The rule set a check asked for with `plan` (which may be undefined); throws a TypeError if none. */
  select(plan: unknown): RuleSet;
  /** The named plan's rule set, if this limiter has it. */
  get(plan: string): RuleSet | undefined;
  /** Whether the limiter makes every rule a shadow rule, those of runtime overrides included. */
  readonly shadow: boolean;
}

const PLAN_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Reserved: rules of a runtime override are shown as `override.<rule>`. */
const RESERVED_PLAN = 'override';

/** Makes a rule set whose rules are shown as `<qualifier>.<name>` but stored under `<name>`. */
export function ruleSet(rules: readonly ResolvedRule[], plan: string | undefined, qualifier = plan): RuleSet {
  const leasing = rules.filter((rule) => rule.quotaLease !== undefined).length;
  if (leasing > 0 && leasing < rules.length) {
    throw new TypeError(
      `${qualifier ?? 'rules'}: quotaLease is set on ${leasing} of ${rules.length} rules; set it on every rule of a rule set or on none (a check is answered from slices only when all its rules have one)`,
    );
  }
  const shown =
    qualifier === undefined ? rules : rules.map((rule) => ({ ...rule, name: `${qualifier}.${rule.name}` }));
  const costRules = rules.filter((rule) => rule.counts === 'cost');
  return {
    plan,
    rules: Object.freeze(shown),
    smallestCapacity: Math.min(...costRules.map((rule) => rule.capacity)),
    countsCost: costRules.length > 0,
    holdsSlots: rules.some((rule) => rule.algorithm.slots !== undefined),
    leased: leasing > 0,
    thresholds: rules.some((rule) => rule.thresholds !== undefined),
  };
}

/**
 * Resolves `rules` or `plans` (exactly one) and `defaultPlan`; every error names the option.
 * `shadow` makes every rule a shadow rule.
 */
export function resolvePlans(rules: unknown, plans: unknown, defaultPlan: unknown, shadow = false): Plans {
  if (rules !== undefined && plans !== undefined) {
    throw new TypeError('createLimiter: pass either rules or plans, not both');
  }
  if (plans === undefined) {
    if (defaultPlan !== undefined) {
      throw new TypeError('defaultPlan: only a limiter created with plans has a default plan');
    }
    if (rules === undefined) {
      throw new TypeError(
        "createLimiter: rules or plans is required, e.g. rules: { algorithm: 'sliding-window', limit: 100, window: '1m' }",
      );
    }
    const only = ruleSet(resolveRules(rules, 'rules', shadow), undefined);
    return {
      names: [],
      defaultPlan: undefined,
      sets: [only],
      stored: only.rules,
      select(plan) {
        if (plan !== undefined) {
          throw new TypeError(
            `plan: ${describe(plan)} given, but this limiter was created with rules, not plans`,
          );
        }
        return only;
      },
      get: () => undefined,
      shadow,
    };
  }
  if (typeof plans !== 'object' || plans === null || Array.isArray(plans)) {
    throw new TypeError(`plans: expected an object of plan name → rules, got ${describe(plans)}`);
  }
  const byName = new Map<string, RuleSet>();
  for (const [name, planRules] of Object.entries(plans as Record<string, RuleOptions | RuleOptions[]>)) {
    if (!PLAN_NAME.test(name) || name === RESERVED_PLAN) {
      throw new RangeError(
        `plans: ${JSON.stringify(name)} is not a plan name; use 1-64 letters, digits, '_' or '-' (not 'override')`,
      );
    }
    byName.set(name, ruleSet(resolveRules(planRules, `plans.${name}`, shadow), name));
  }
  const names = [...byName.keys()];
  if (names.length === 0) throw new TypeError('plans: at least one plan is required');
  const known = names.map((name) => JSON.stringify(name)).join(', ');
  if (defaultPlan !== undefined && (typeof defaultPlan !== 'string' || !byName.has(defaultPlan))) {
    throw new RangeError(`defaultPlan: ${describe(defaultPlan)} is not one of the plans ${known}`);
  }
  const stored = new Map<string, ResolvedRule>();
  for (const set of byName.values()) for (const rule of set.rules) stored.set(rule.keyTail, rule);
  return {
    names,
    defaultPlan,
    sets: [...byName.values()],
    stored: [...stored.values()],
    select(plan) {
      const name = plan ?? defaultPlan;
      if (name === undefined) {
        throw new TypeError(`plan: required (this limiter has plans ${known} and no defaultPlan)`);
      }
      const set = typeof name === 'string' ? byName.get(name) : undefined;
      if (set === undefined)
        throw new TypeError(`plan: unknown plan ${describe(name)}; the plans are ${known}`);
      return set;
    },
    get: (name) => byName.get(name),
    shadow,
  };
}

/** Every stored rule of a key: all plans', and `extra` (its override's) where they differ. */
export function storedRulesWith(plans: Plans, extra: readonly ResolvedRule[]): readonly ResolvedRule[] {
  const missing = extra.filter((rule) => !plans.stored.some((other) => other.keyTail === rule.keyTail));
  return missing.length === 0 ? plans.stored : [...plans.stored, ...missing];
}
