/**
 * Token bucket: a bucket of `capacity` (= `burst`, default `limit`) tokens refilled
 * continuously at `limit` tokens per window; a request takes `cost` tokens.
 *
 * Tokens are kept scaled by `windowMs` (one token = W units, refill = `limit` units per ms), so
 * every quantity is an integer and the TypeScript and Lua twins agree exactly. `limit × window`
 * and `burst × window` are validated to stay far below 2^53.
 *
 * State: scaled tokens and the time they were counted. Redis: one string "tokens:at".
 */
import { type Algorithm, NEVER } from './types.js';

export interface TokenBucketState {
  readonly tokens: number;
  readonly at: number;
}

export const tokenBucket: Algorithm<TokenBucketState> = {
  name: 'token-bucket',
  tag: 'tb',
  code: 3,
  hasBurst: true,
  keySuffixes: [''],
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, { limit: L, windowMs: W, capacity: B }) {
    const full = B * W;
    const need = cost * W;
    let tokens = full;
    if (state !== undefined) {
      // A clock that steps back (failover to another Redis) refills nothing rather than going negative.
      const elapsed = Math.max(0, now - state.at);
      tokens = elapsed >= Math.ceil((full - state.tokens) / L) ? full : state.tokens + elapsed * L;
    }
    const allowed = tokens >= need;
    const resetAfterMs = Math.ceil((full - tokens + need) / L);
    return {
      allowed,
      remaining: Math.floor(tokens / W),
      resetMs: Math.ceil((full - tokens) / L),
      retryAfterMs: allowed ? 0 : cost > B ? NEVER : Math.ceil((need - tokens) / L),
      resetAfterMs,
      commit: () => ({ tokens: tokens - need, at: now }),
      ttlMs: resetAfterMs,
    };
  },
  lua: `
EVALUATORS[3] = function(k, L, W, B, cost)
  local key = KEYS[k]
  local full = B * W
  local need = cost * W
  local tokens = full
  local stored = redis.call('GET', key)
  if stored then
    local t, at = string.match(stored, '^(%d+):(%d+)$')
    t, at = tonumber(t), tonumber(at)
    local elapsed = math.max(0, now - at)
    if elapsed >= math.ceil((full - t) / L) then tokens = full else tokens = t + elapsed * L end
  end
  local allowed = tokens >= need
  local retry = 0
  if not allowed then
    if cost > B then retry = NEVER else retry = math.ceil((need - tokens) / L) end
  end
  local resetAfter = math.ceil((full - tokens + need) / L)
  return allowed, math.floor(tokens / W), math.ceil((full - tokens) / L), retry, resetAfter, function()
    redis.call('SET', key, fmt(tokens - need) .. ':' .. fmt(now), 'PX', resetAfter)
  end
end`,
};
