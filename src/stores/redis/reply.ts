/**
 * The Lua script's reply to one check, decoded: the only place that knows its wire format.
 * Per rule, WIRE_FIELDS integers (allowed: 1, or 0 denied, 2 denied while the rule's block holds
 * the key, 1 + 4 × m allowed and crossing the calendar thresholds of bit mask m; remaining, resetMs, retryAfterMs, resetAfterMs, token), then the override's remaining milliseconds (-1: no expiry) when the check named one;
 * or `['override', current]` when the key's override differs from the one the check named.
 */
import { Evaluation } from '../../algorithms/types.js';
import { describe } from '../../describe.js';
import type { EvaluateReply, RuleOutcome } from '../types.js';

/** The integers the script returns per rule. */
export const WIRE_FIELDS = 6;

/** Whether one check's reply is the news that its override changed. */
function isOverrideNews(reply: readonly unknown[]): boolean {
  return reply[0] === 'override' && reply.length === 2;
}

/** The news that the key's override is now `current` (nothing was evaluated). */
function overrideNews(current: unknown): EvaluateReply {
  const value = String(current);
  return { overrideChanged: true, value: value === '' ? undefined : value };
}

/**
 * Decodes the reply to a check of `ruleCount` rules that named the override `seen` (`'*'`: not
 * compared, `''`: none); throws on any other shape.
 */
export function decodeCheckReply(reply: unknown, ruleCount: number, seen: string): EvaluateReply {
  if (!Array.isArray(reply)) throw unexpected(reply);
  if (isOverrideNews(reply)) return overrideNews(reply[1]);
  return decodeOutcomes(reply, 0, reply.length, ruleCount, seen);
}

/**
 * Decodes one check's part of a batch's flat reply (see the 'b' mode in script.ts), which starts
 * at `at`: a count and that many integers, or -1 and the key's current override. Read in place:
 * a copy of each part would cost every check an array.
 */
export function decodeBatchPart(
  reply: readonly unknown[],
  at: number,
  ruleCount: number,
  seen: string,
): EvaluateReply {
  const count = reply[at];
  if (count === -1) return overrideNews(reply[at + 1]);
  return decodeOutcomes(reply, at + 1, count as number, ruleCount, seen);
}

/** The outcomes in `length` integers of `reply` from `from` (see the header). */
function decodeOutcomes(
  reply: readonly unknown[],
  from: number,
  length: number,
  ruleCount: number,
  seen: string,
): EvaluateReply {
  const withTtl = seen !== '*' && seen !== '';
  const expected = ruleCount * WIRE_FIELDS + (withTtl ? 1 : 0);
  if (length !== expected) throw unexpected(reply.slice(from, from + length));
  const outcomes: RuleOutcome[] = new Array(ruleCount);
  for (let i = 0; i < ruleCount; i++) {
    const at = from + i * WIRE_FIELDS;
    const allowed = reply[at] as number;
    outcomes[i] = new Evaluation(
      allowed % 4 === 1,
      reply[at + 1] as number,
      reply[at + 2] as number,
      reply[at + 3] as number,
      reply[at + 4] as number,
      reply[at + 5] as number,
      allowed === 2,
      allowed > 1 ? (allowed - 1) / 4 : 0,
    );
  }
  if (!withTtl) return { outcomes };
  const ttl = reply[from + expected - 1] as number;
  return { outcomes, overrideTtlMs: ttl < 0 ? Number.POSITIVE_INFINITY : ttl };
}

function unexpected(reply: unknown): Error {
  return new Error(`floodgate: unexpected reply from the Redis script: ${describe(reply)}`);
}

/**
 * Whether the part of a batch's reply at `at` (see decodeBatchPart) is a denial by some rule, or
 * an override to learn: either way nothing was written.
 */
export function deniedOrOverrideAt(reply: readonly unknown[], at: number): boolean {
  const count = reply[at] as number;
  if (count === -1) return true;
  for (let field = at + 1; field + WIRE_FIELDS <= at + 1 + count; field += WIRE_FIELDS)
    if ((reply[field] as number) % 4 !== 1) return true;
  return false;
}
