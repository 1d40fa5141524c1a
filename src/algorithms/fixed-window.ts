/**
 * Fixed window: at most `limit` units per window aligned to the clock (windows start at
 * multiples of `windowMs` since the epoch). Cheapest of all, and it keeps the well-known
 * boundary burst: up to 2 × limit can pass around a window edge.
 *
 * State: the window's start and the units admitted in it. Redis: one string "start:count".
 */
import { type Algorithm, NEVER } from './types.js';

export interface FixedWindowState {
  readonly start: number;
  readonly count: number;
}

export const fixedWindow: Algorithm<FixedWindowState> = {
  name: 'fixed-window',
  tag: 'fw',
  code: 1,
  hasBurst: false,
  keySuffixes: [''],
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, { limit, windowMs }) {
    const start = now - (now % windowMs);
    const count = state !== undefined && state.start === start ? state.count : 0;
    const untilEnd = start + windowMs - now;
    const allowed = count + cost <= limit;
    return {
      allowed,
      remaining: Math.max(0, limit - count),
      resetMs: count > 0 ? untilEnd : 0,
      retryAfterMs: allowed ? 0 : cost > limit ? NEVER : untilEnd,
      resetAfterMs: untilEnd,
      commit: () => ({ start, count: count + cost }),
      ttlMs: untilEnd,
    };
  },
  lua: `
EVALUATORS[1] = function(k, L, W, B, cost)
  local key = KEYS[k]
  local start = now - now % W
  local count = 0
  local stored = redis.call('GET', key)
  if stored then
    local s, c = string.match(stored, '^(%d+):(%d+)$')
    if tonumber(s) == start then count = tonumber(c) end
  end
  local untilEnd = start + W - now
  local allowed = count + cost <= L
  local retry = 0
  if not allowed then retry = (cost > L) and NEVER or untilEnd end
  local reset = 0
  if count > 0 then reset = untilEnd end
  return allowed, math.max(0, L - count), reset, retry, untilEnd, function()
    redis.call('SET', key, fmt(start) .. ':' .. fmt(count + cost), 'PX', untilEnd)
  end
end`,
};
