/**
 * How a rule list travels to the script: its keys under a head, its script, and the rule set
 * string a batch sends once (see ruleText), computed once per list.
 */
import { BLOCK_SUFFIX } from '../../algorithms/block.js';
import type { ResolvedRule } from '../../base/types.js';
import { overrideKey } from './key-layout.js';
import { type Script, scriptFor } from './script.js';

export interface DescribedRules {
  /** Each rule's key suffixes (its key tail and the algorithm's suffixes), in rule order. */
  readonly suffixes: readonly (readonly string[])[];
  /** The block key suffix of each rule with a block, in rule order: after every rule's keys. */
  readonly blockSuffixes: readonly string[];
  readonly script: Script;
  readonly ruleSet: string;
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
      ruleSet: rules.map(ruleText).join(';'),
      stamped: rules.every((rule) => rule.algorithm.keepsKeyTime),
    };
    described.set(rules, found);
  }
  return found;
}

/** "code,limit,windowMs,capacity,shadow,blockMs,factor,maxMs,forgetMs,requests" (block fields 0 for none). */
function ruleText(rule: ResolvedRule): string {
  const { block } = rule;
  const blockText =
    block === undefined ? '0,0,0,0' : `${block.durationMs},${block.factor},${block.maxMs},${block.forgetMs}`;
  return `${rule.algorithm.code},${rule.limit},${rule.windowMs},${rule.capacity},${rule.shadow ? 1 : 0},${blockText},${requestsFlag(rule)}`;
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
 * One rule's arguments to the settle mode, with the token its check returned; `refund` marks a
 * rule that counts requests 2, so it gives its 1 back too.
 */
export function settleArgs(rule: ResolvedRule, token: number, refund = false): string[] {
  const requests = requestsFlag(rule) * (refund ? 2 : 1);
  return [rule.algorithm.code, rule.limit, rule.windowMs, rule.capacity, token, requests].map(String);
}
