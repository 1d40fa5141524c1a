/**
 * How a rule list travels to the script: its keys under a head, its script, and the rule set
 * string a batch sends once ("code,limit,windowMs,capacity;..."), computed once per list.
 */
import type { ResolvedRule } from '../../core/types.js';
import { overrideKey } from './key-layout.js';
import { type Script, scriptFor } from './script.js';

export interface DescribedRules {
  /** Each rule's key suffixes (its key tail and the algorithm's suffixes), in rule order. */
  readonly suffixes: readonly (readonly string[])[];
  readonly script: Script;
  readonly ruleSet: string;
}

const described = new WeakMap<readonly ResolvedRule[], DescribedRules>();

export function describeRules(rules: readonly ResolvedRule[]): DescribedRules {
  let found = described.get(rules);
  if (found === undefined) {
    found = {
      suffixes: rules.map((rule) =>
        rule.algorithm.keySuffixes.map((suffix: string) => rule.keyTail + suffix),
      ),
      script: scriptFor(rules.map((rule) => rule.algorithm.code)),
      ruleSet: rules
        .map((rule) => `${rule.algorithm.code},${rule.limit},${rule.windowMs},${rule.capacity}`)
        .join(';'),
    };
    described.set(rules, found);
  }
  return found;
}

/** The key's override key first, then every rule's keys. */
export function ruleKeys(head: string, suffixes: DescribedRules['suffixes']): string[] {
  const keys: string[] = [overrideKey(head)];
  for (const list of suffixes) for (const suffix of list) keys.push(head + suffix);
  return keys;
}

/** One rule's arguments to the settle mode, with the token its check returned. */
export function settleArgs(rule: ResolvedRule, token: number): string[] {
  return [rule.algorithm.code, rule.limit, rule.windowMs, rule.capacity, token].map(String);
}
