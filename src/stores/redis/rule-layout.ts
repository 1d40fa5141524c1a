/**
 * How a rule list travels to the script: its keys under a head, its script, and the rule set
 * string a batch sends once (see ruleText), computed once per list.
 */
import { BLOCK_SUFFIX } from '../../algorithms/block.js';
import type { CalendarPeriods, ResolvedRule } from '../../base/types.js';
import { overrideKey } from './key-layout.js';
import { type Script, scriptFor } from './script.js';

export interface DescribedRules {
  /** Each rule's key suffixes (its key tail and the algorithm's suffixes), in rule order. */
  readonly suffixes: readonly (readonly string[])[];
  /** The block key suffix of each rule with a block, in rule order: after every rule's keys. */
  readonly blockSuffixes: readonly string[];
  readonly script: Script;
  /** The rule set argument; for rules with a calendar period, the one around the caller's clock is ruleSetAt's. */
  readonly ruleSet: string;
  /** With calendar rules: the rule set argument at `now` (the caller's clock, epoch ms). */
  readonly ruleSetAt?: (now: number) => string;
  /** Whether its checks may carry the process's stamp of the server's clock (Algorithm.keepsKeyTime). */
  readonly stamped: boolean;
}

const described = new WeakMap<readonly ResolvedRule[], DescribedRules>();

export function describeRules(rules: readonly ResolvedRule[]): DescribedRules {
  let found = described.get(rules);
  if (found === undefined) {
    found = {
      suffixes: rules.map((rule) =>
        rule.algorithm.keySuffixes.map((suffix: string) => rule.keyTail + suffix),
      ),
      blockSuffixes: rules.flatMap((rule) => (rule.block === undefined ? [] : [rule.keyTail + BLOCK_SUFFIX])),
      script: scriptFor(rules.map((rule) => rule.algorithm.code)),
      ruleSet: rules.map((rule) => ruleText(rule, String(rule.windowMs))).join(';'),
      ...(rules.some((rule) => rule.periods !== undefined) ? { ruleSetAt: calendarRuleSet(rules) } : {}),
      stamped: rules.every((rule) => rule.algorithm.keepsKeyTime),
    };
    described.set(rules, found);
  }
  return found;
}

/** "code,limit,window,capacity,shadow,blockMs,factor,maxMs,forgetMs,requests" (block fields 0 for none). */
function ruleText(rule: ResolvedRule, window: string): string {
  const { block } = rule;
  const blockText =
    block === undefined ? '0,0,0,0' : `${block.durationMs},${block.factor},${block.maxMs},${block.forgetMs}`;
  return `${rule.algorithm.code},${rule.limit},${window},${rule.capacity},${rule.shadow ? 1 : 0},${blockText},${requestsFlag(rule)}`;
}

/**
 * A calendar rule's window as the script reads it: the starts of the periods before, around and
 * after `now` ("p0/p1/p2/p3"), from which the script takes the one holding the server's clock,
 * then its threshold units, if any.
 */
function periodStarts(rule: ResolvedRule, periods: CalendarPeriods, start: number, end: number): string {
  const starts = `${periods.at(start - 1).start}/${start}/${end}/${periods.at(end).end}`;
  return rule.thresholdUnits === undefined ? starts : `${starts}/${rule.thresholdUnits.join('/')}`;
}

/** A rule's window argument at `now`: its milliseconds, or a calendar rule's period starts. */
function windowText(rule: ResolvedRule, now: number): string {
  if (rule.periods === undefined) return String(rule.windowMs);
  const { start, end } = rule.periods.at(now);
  return periodStarts(rule, rule.periods, start, end);
}

/** The rule set argument of `rules` (some counted by calendar period) at `now`, rebuilt only when a period ends. */
function calendarRuleSet(rules: readonly ResolvedRule[]): (now: number) => string {
  let from = 0;
  let until = 0;
  let text = '';
  return function ruleSetAt(now) {
    if (now < from || now >= until) {
      from = Number.NEGATIVE_INFINITY;
      until = Number.POSITIVE_INFINITY;
      text = rules
        .map((rule) => {
          if (rule.periods === undefined) return ruleText(rule, String(rule.windowMs));
          const { start, end } = rule.periods.at(now);
          from = Math.max(from, start);
          until = Math.min(until, end);
          return ruleText(rule, periodStarts(rule, rule.periods, start, end));
        })
        .join(';');
    }
    return text;
  };
}

/** 1 for a rule that takes 1 per check whatever its cost (see RuleOptions.counts), else 0. */
function requestsFlag(rule: ResolvedRule): number {
  return rule.counts === 'requests' ? 1 : 0;
}

/** The key's override key first, then every rule's keys, then the rules' block keys. */
export function ruleKeys(
  head: string,
  described: Pick<DescribedRules, 'suffixes' | 'blockSuffixes'>,
): string[] {
  const keys: string[] = [overrideKey(head)];
  for (const list of described.suffixes) for (const suffix of list) keys.push(head + suffix);
  for (const suffix of described.blockSuffixes) keys.push(head + suffix);
  return keys;
}

/**
 * One rule's arguments to the settle mode at `now` (the caller's clock), with the token its check
 * returned; `refund` marks a rule that counts requests 2, so it gives its 1 back too.
 */
export function settleArgs(rule: ResolvedRule, token: number, now: number, refund = false): string[] {
  const requests = requestsFlag(rule) * (refund ? 2 : 1);
  return [
    String(rule.algorithm.code),
    String(rule.limit),
    windowText(rule, now),
    String(rule.capacity),
    String(token),
    String(requests),
  ];
}
