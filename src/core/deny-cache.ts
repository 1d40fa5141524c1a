/**
 * The local deny cache: once a key is denied for a cost until time T, later checks of that key
 * with at least that cost are answered in this process until T, without a store call. Denials
 * are monotone (waiting never makes a request less allowed when nothing else is admitted), so the
 * cached answer is the answer the store would give. A smaller cost is not covered: it may fit.
 * Bounded: at most `maxKeys` entries, least recently used dropped first.
 */

import { createLru } from '../base/lru.js';
import { type Decision, type RuleDecision, withRules } from './decision.js';

interface Denial {
  decision: Decision;
  cost: number;
  /** Local clock time at which the denial was recorded. */
  at: number;
  until: number;
}

export interface DenyCache {
  /** A still-valid denial for `key` at `cost`, its times shifted to `now`; undefined if none. */
  get(key: string, cost: number, now: number): Decision | undefined;
  remember(key: string, cost: number, decision: Decision, now: number): void;
  forget(key: string): void;
  readonly size: number;
}

export function createDenyCache(maxKeys: number): DenyCache {
  const denials = createLru<Denial>(maxKeys);
  return {
    get size() {
      return denials.size;
    },
    get(key, cost, now) {
      const denial = denials.get(key);
      if (denial === undefined) return undefined;
      if (now >= denial.until) {
        denials.delete(key);
        return undefined;
      }
      if (cost < denial.cost) return undefined;
      return shift(denial.decision, now - denial.at);
    },
    remember(key, cost, decision, now) {
      if (!Number.isFinite(decision.retryAfterMs) || decision.retryAfterMs <= 0) return;
      denials.set(key, { decision, cost, at: now, until: now + decision.retryAfterMs });
    },
    forget(key) {
      denials.delete(key);
    },
  };
}

/** The same denial, `elapsed` ms later: waits shrink, counts do not change. */
function shift(decision: Decision, elapsed: number): Decision {
  if (elapsed <= 0) return decision;
  const rules = decision.rules.map(
    (rule): RuleDecision => ({
      rule: rule.rule,
      allowed: rule.allowed,
      limit: rule.limit,
      windowMs: rule.windowMs,
      ...(rule.quota === undefined ? {} : { quota: rule.quota }),
      remaining: rule.remaining,
      resetMs: Math.max(0, rule.resetMs - elapsed),
      retryAfterMs: rule.allowed ? 0 : Math.max(1, rule.retryAfterMs - elapsed),
      ...(rule.shadow === undefined ? {} : { shadow: rule.shadow }),
      ...(rule.blocked === undefined ? {} : { blocked: rule.blocked }),
    }),
  );
  const binding = rules.find((rule) => rule.rule === decision.rule) ?? (rules[0] as RuleDecision);
  return withRules(binding, false, rules, decision.degraded, decision.shadowDenied);
}
