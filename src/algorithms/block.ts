/**
 * Block periods: once a rule with a `block` denies a key, the key stays denied by that rule
 * until the block ends, whatever the rule's window would allow. A new block of the same key
 * while the last one is remembered (until `forgetAfter` past its end) lasts `factor` times the
 * last, capped at `max`. Like an algorithm, specified here in TypeScript and twinned in Lua; the
 * stores keep the state (O(1) per key and rule) beside the rule's own.
 *
 * State: the block's end and its length. Redis: one string "end:length" per key and rule,
 * expiring `forgetAfter` after the block's end.
 */
import { Evaluation, NEVER } from './types.js';

/** A rule's block option, resolved (see rules.ts). */
export interface BlockParams {
  readonly durationMs: number;
  /** Each new block within `forgetMs` lasts `factor` times the last (1: never longer). */
  readonly factor: number;
  readonly maxMs: number;
  /** How long after a block's end the next block still escalates from it. */
  readonly forgetMs: number;
}

export interface BlockState {
  readonly end: number;
  readonly length: number;
}

/** A rule's evaluation under its block, and the block to store (undefined: leave it as is). */
export interface Blocked {
  readonly evaluation: Evaluation;
  readonly next: BlockState | undefined;
}

/** The key suffix of a rule's block state, after the rule's key tail. */
export const BLOCK_SUFFIX = ':block';

/**
 * The rule's `evaluation` under its block `state` at `now`: denied until a block's end, and a
 * new block when the rule denies a check that consumes (a peek never starts one, nor does a cost
 * the rule can never admit).
 */
export function applyBlock(
  state: BlockState | undefined,
  now: number,
  evaluation: Evaluation,
  params: BlockParams,
  consume: boolean,
): Blocked {
  const { remaining, resetMs, retryAfterMs, resetAfterMs, token } = evaluation;
  if (state !== undefined && now < state.end) {
    const left = state.end - now;
    const retry = retryAfterMs === NEVER ? NEVER : Math.max(retryAfterMs, left);
    return {
      evaluation: new Evaluation(false, 0, Math.max(resetMs, left), retry, resetAfterMs, token, true),
      next: undefined,
    };
  }
  if (evaluation.allowed || retryAfterMs === NEVER || !consume) return { evaluation, next: undefined };
  const length =
    state !== undefined && now < state.end + params.forgetMs
      ? Math.min(Math.floor(state.length * params.factor), params.maxMs)
      : params.durationMs;
  return {
    evaluation: new Evaluation(
      false,
      remaining,
      Math.max(resetMs, length),
      Math.max(retryAfterMs, length),
      resetAfterMs,
      token,
    ),
    next: { end: now + length, length },
  };
}

/**
 * The Lua twin: `applyBlock(kb, rule, mode, allowed, remaining, reset, retry)` with the block's
 * string key at KEYS[kb] and `rule` = { code, limit, windowMs, capacity, shadow, durationMs,
 * factor, maxMs, forgetMs }; returns allowed, remaining, reset, retry, and true when the block
 * holds the key (the denial is the block's). The preamble's `get`, `put`, `fmt` and `now` are in
 * scope.
 */
export const BLOCK_LUA = `
local function applyBlock(kb, rule, mode, allowed, remaining, reset, retry)
  local stored, ends, length = get(kb), nil, nil
  if stored then
    ends, length = match(stored, '^(%d+):(%d+)$')
    ends, length = tonumber(ends), tonumber(length)
  end
  -- Blocked: denied until the block's end, whatever the window says.
  if ends and now < ends then
    local left = ends - now
    return false, 0, max(reset, left), retry == NEVER and NEVER or max(retry, left), true
  end
  if allowed or retry == NEVER or mode ~= 'c' then return allowed, remaining, reset, retry end
  -- A new block: longer than the last one while that one is remembered.
  local d = rule[6]
  if ends and now < ends + rule[9] then d = min(floor(length * rule[7]), rule[8]) end
  put(kb, fmt(now + d) .. ':' .. fmt(d), d + rule[9])
  return false, remaining, max(reset, d), max(retry, d)
end
`;
