/**
 * The Lua script's reply to one check, decoded: the only place that knows its wire format.
 * Per rule, WIRE_FIELDS integers (allowed 0/1, remaining, resetMs, retryAfterMs, resetAfterMs,
 * token), then the override's remaining milliseconds (-1: no expiry) when the check named one;
 * or `['override', current]` when the key's override differs from the one the check named.
 */
import { Evaluation } from '../../algorithms/types.js';
import { describe } from '../../describe.js';
import type { EvaluateReply, RuleOutcome } from '../types.js';

/** The integers the script returns per rule. */
export const WIRE_FIELDS = 6;

/** One check's part of a batch reply (see batch.ts split): its integers, or the override news. */
export type CheckReply = readonly unknown[];

/** Whether one check's reply is the news that its override changed. */
function isOverrideNews(reply: CheckReply): boolean {
  return reply[0] === 'override' && reply.length === 2;
}

/**
 * Decodes the reply to a check of `ruleCount` rules that named the override `seen` (`'*'`: not
 * compared, `''`: none); throws on any other shape.
 */
export function decodeCheckReply(reply: unknown, ruleCount: number, seen: string): EvaluateReply {
  if (Array.isArray(reply) && isOverrideNews(reply)) {
    const value = String(reply[1]);
    return { overrideChanged: true, value: value === '' ? undefined : value };
  }
  const withTtl = seen !== '*' && seen !== '';
  const expected = ruleCount * WIRE_FIELDS + (withTtl ? 1 : 0);
  if (!Array.isArray(reply) || reply.length !== expected) {
    throw new Error(`floodgate: unexpected reply from the Redis script: ${describe(reply)}`);
  }
  const outcomes: RuleOutcome[] = new Array(ruleCount);
  for (let i = 0; i < ruleCount; i++) {
    const at = i * WIRE_FIELDS;
    outcomes[i] = new Evaluation(
      reply[at] === 1,
      reply[at + 1],
      reply[at + 2],
      reply[at + 3],
      reply[at + 4],
      reply[at + 5],
    );
  }
  if (!withTtl) return { outcomes };
  const ttl = reply[expected - 1] as number;
  return { outcomes, overrideTtlMs: ttl < 0 ? Number.POSITIVE_INFINITY : ttl };
}

/** Whether one check's reply is a denial by some rule, or an override to learn (nothing was written). */
export function deniedOrOverride(reply: unknown): boolean {
  if (!Array.isArray(reply) || isOverrideNews(reply)) return true;
  for (let at = 0; at + WIRE_FIELDS <= reply.length; at += WIRE_FIELDS) if (reply[at] === 0) return true;
  return false;
}
