/**
 * Types that several parts share (rules, core, stores, resilience), and what a check takes from
 * a rule: kept here so that each may import them without importing the others.
 */
import type { BlockParams } from '../algorithms/block.js';
import type { AnyAlgorithm, Periods } from '../algorithms/index.js';

/** A validated rule. `limit`, `windowMs` and `capacity` are what the algorithms compute with. */
export interface ResolvedRule {
  readonly name: string;
  readonly algorithm: AnyAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly capacity: number;
  /** Appended to a key's head to make this rule's base Redis key: `:<name>:<algorithm tag>`. */
  readonly keyTail: string;
  /** Never denies: its denials are reported in `shadowDenied` (see RuleOptions.shadow). */
  readonly shadow: boolean;
  /** The rule's block periods (see algorithms/block.ts), or undefined when it has none. */
  readonly block: BlockParams | undefined;
  /** What a check takes from it: `'requests'` 1, `'cost'` the check's cost (see ruleCost). */
  readonly counts: 'requests' | 'cost';
  /** Quota leasing (see core/leases.ts), or absent when the rule has none. */
  readonly quotaLease?: QuotaLeaseParams;
  /** A rule counted by calendar period (see RuleOptions.period): its periods; absent otherwise. */
  readonly periods?: CalendarPeriods;
  /** The usage fractions announced by `threshold` events, ascending; absent when none. */
  readonly thresholds?: readonly number[];
  /** The same in units (the usage that reaches each): what the algorithm compares. */
  readonly thresholdUnits?: readonly number[];
}

/** A calendar rule's periods, and the options that made them (for inspect and messages). */
export interface CalendarPeriods extends Periods {
  readonly period: 'day' | 'week' | 'month' | 'year';
  readonly timeZone: string;
  /** As the rule gave it, or undefined for the calendar's own start. */
  readonly anchor: string | undefined;
}

/** What a check of `cost` takes from `rule`: 1 for a rule that counts requests, else `cost`. */
export function ruleCost(rule: ResolvedRule, cost: number): number {
  return rule.counts === 'requests' ? 1 : cost;
}

/** A rule's validated `quotaLease`. */
export interface QuotaLeaseParams {
  /** The largest slice, in units. */
  readonly max: number;
}

export interface CheckOptions {
  /** Units this request takes: a positive integer, default 1 (e.g. LLM tokens, or an estimate to `settle` later). */
  cost?: number;
  /** With `plans`: the plan whose rules apply (default `defaultPlan`). An unknown plan throws. */
  plan?: string;
}

/** Why a decision was not made by the configured store: `false` when it was. */
export type Degraded = false | 'timeout' | 'unavailable' | 'error';
