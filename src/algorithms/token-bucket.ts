/**
 * Token bucket: a bucket of `capacity` (= `burst`, default `limit`) tokens refilled
 * continuously at `limit` tokens per window; a request takes `cost` tokens.
 *
 * Tokens are kept scaled by `windowMs` (one token = W units, refill = `limit` units per ms), so
 * every quantity is an integer and the TypeScript and Lua twins agree exactly. `limit × window`
 * and `burst × window` are validated to stay far below 2^53.
 *
 * Settling puts refunded tokens back (never above a full bucket) and takes charged ones out; the
 * bucket may go down to minus one full bucket (debt), which later requests wait out as it refills.
 *
 * State: scaled tokens (negative in debt) and the time they were counted. Redis: one string
 * "tokens:at".
 */
import { type Algorithm, adjust, Evaluation, NEVER } from './types.js';

export interface TokenBucketState {
  tokens: number;
  at: number;
}

/** Scaled tokens in the bucket at `now`. */
function tokensAt(state: TokenBucketState | undefined, now: number, L: number, full: number): number {
  if (state === undefined) return full;
  // A clock that steps back (failover to another Redis) refills nothing rather than going negative.
  const elapsed = Math.max(0, now - state.at);
  return elapsed >= Math.ceil((full - state.tokens) / L) ? full : state.tokens + elapsed * L;
}

/**
 * The time the bucket is counted at after a check at `now`: never before its stored time, so a
 * clock stamp a little behind another process's (see docs/algorithms.md) refills nothing twice.
 */
function timeOf(state: TokenBucketState | undefined, now: number): number {
  return state !== undefined && state.at > now ? state.at : now;
}

/** The Lua dispatch code: `EVALUATORS[3]`, `SETTLERS[3]` and the rule sets a store sends. */
const CODE = 3;

export const tokenBucket: Algorithm<TokenBucketState> = {
  name: 'token-bucket',
  tag: 'tb',
  code: CODE,
  hasBurst: true,
  keySuffixes: [''],
  keepsKeyTime: true,
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, { limit: L, windowMs: W, capacity: B }) {
    const full = B * W;
    const need = cost * W;
    const tokens = tokensAt(state, now, L, full);
    const allowed = tokens >= need;
    const resetAfterMs = Math.ceil((full - tokens + need) / L);
    const remaining = Math.max(0, Math.floor(tokens / W));
    const retryAfterMs = allowed ? 0 : cost > B ? NEVER : Math.ceil((need - tokens) / L);
    return new Evaluation(allowed, remaining, Math.ceil((full - tokens) / L), retryAfterMs, resetAfterMs, 0);
  },
  commit(state, now, cost, { limit: L, windowMs: W, capacity: B }, spare) {
    const tokens = tokensAt(state, now, L, B * W) - cost * W;
    const at = timeOf(state, now);
    const next = state ?? spare;
    if (next === undefined) return { tokens, at };
    next.tokens = tokens;
    next.at = at;
    return next;
  },
  settle(state, now, { reserved, actual }, { limit: L, windowMs: W, capacity: B }) {
    const full = B * W;
    // Work on the missing tokens (the bucket's usage), as gcra works on its TAT.
    const missing = adjust(full - tokensAt(state, now, L, full), (actual - reserved) * W, 2 * full);
    if (missing === 0) return 'delete';
    return { state: { tokens: full - missing, at: timeOf(state, now) }, ttlMs: Math.ceil(missing / L) };
  },
  lua: `
-- Scaled tokens in the bucket now (negative in debt), and the time they are counted at: never
-- before the stored time (see timeOf in token-bucket.ts).
local function tokensAt(k, L, full)
  local stored = get(k)
  if not stored then return full, now end
  local t, at = match(stored, '^(-?%d+):(%d+)$')
  t, at = tonumber(t), tonumber(at)
  if at > now then return t, at end
  if now - at >= ceil((full - t) / L) then return full, now end
  return t + (now - at) * L, now
end

local function tokenBucketCommit(k, cost, left, resetAfter, at)
  put(k, fmt(left) .. ':' .. fmtFresh(at), resetAfter)
end

EVALUATORS[${CODE}] = function(k, L, W, B, cost)
  local full = B * W
  local need = cost * W
  local tokens, at = tokensAt(k, L, full)
  local allowed = tokens >= need
  local retry = 0
  if not allowed then
    if cost > B then retry = NEVER else retry = ceil((need - tokens) / L) end
  end
  local resetAfter = ceil((full - tokens + need) / L)
  return allowed, max(0, floor(tokens / W)), ceil((full - tokens) / L), retry, resetAfter, 0,
    tokenBucketCommit, tokens - need, resetAfter, at
end

SETTLERS[${CODE}] = function(k, L, W, B, token, reserved, delta)
  local full = B * W
  local tokens, at = tokensAt(k, L, full)
  local missing = adjust(full - tokens, delta * W, 2 * full)
  if missing == 0 then
    del(k)
  else
    put(k, fmt(full - missing) .. ':' .. fmtFresh(at), ceil(missing / L))
  end
end`,
};
