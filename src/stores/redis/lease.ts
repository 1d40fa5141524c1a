/**
 * The Redis store's quota slices: one call of the script's 'q' mode (see script.ts) per slice
 * taken, which also gives back the caller's unused units of its last slice.
 */
import type { ResolvedRule } from '../../base/types.js';
import { describe } from '../../describe.js';
import type { Store } from '../types.js';
import type { Run } from './calls.js';
import { decodeCheckReply } from './reply.js';
import { describeRules, ruleKeys } from './rule-layout.js';

/** Each rule's "code,limit,windowMs,capacity" as the 'q' mode reads it (the token is appended per call). */
const leaseTexts = new WeakMap<readonly ResolvedRule[], readonly string[]>();

function leaseTextsOf(rules: readonly ResolvedRule[]): readonly string[] {
  let texts = leaseTexts.get(rules);
  if (texts === undefined) {
    texts = rules.map((rule) => `${rule.algorithm.code},${rule.limit},${rule.windowMs},${rule.capacity},`);
    leaseTexts.set(rules, texts);
  }
  return texts;
}

/** The store's `lease` over `run`, on the store's clock (`now`: '-1' for the server's TIME). */
export function redisLease(run: Run, now: () => string): NonNullable<Store['lease']> {
  return async function lease(head, rules, cost, want, returned, tokens, overrideSeen) {
    const described = describeRules(rules);
    const texts = leaseTextsOf(rules);
    const args = ['q', String(want), now(), String(cost), overrideSeen, String(returned)];
    for (let i = 0; i < rules.length; i++) args.push(`${texts[i]}${tokens[i] ?? -1}`);
    const reply = await run(described.script, ruleKeys(head, described), args);
    if (!Array.isArray(reply) || typeof reply[0] !== 'number') {
      const decoded = decodeCheckReply(reply, rules.length, overrideSeen);
      if ('overrideChanged' in decoded) return decoded;
      throw new Error(`floodgate: unexpected reply from the Redis script: ${describe(reply)}`);
    }
    const decoded = decodeCheckReply(reply.slice(1), rules.length, '');
    if ('overrideChanged' in decoded) throw new Error('floodgate: unexpected override news in a lease reply');
    return { granted: reply[0], outcomes: decoded.outcomes };
  };
}
