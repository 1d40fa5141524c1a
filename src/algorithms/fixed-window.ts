/**
 * Fixed window: at most `limit` units per window aligned to the clock (windows start at
 * multiples of `windowMs` since the epoch). Cheapest of all, and it keeps the well-known
 * boundary burst: up to 2 × limit can pass around a window edge.
 *
 * Settling adjusts the count while the reservation's window is current. Later, a refund gives
 * nothing back (the units were counted in a window that is over) and a charge is added to the
 * current window. Debt lasts until the window ends.
 *
 * State: the window's start and the units admitted in it. Redis: one string "start:count".
 */
import { type Algorithm, adjust, Evaluation, NEVER } from './types.js';

export interface FixedWindowState {
  start: number;
  count: number;
}

/** The Lua dispatch code: `EVALUATORS[1]`, `SETTLERS[1]` and the rule sets a store sends. */
const CODE = 1;

/**
 * The window of `now` for a key in `state`: never before the state's own window, so a clock
 * stamp a little behind the one that opened it (another process's, see docs/algorithms.md) is
 * counted in that window rather than starting an older one over it.
 */
function windowStart(state: FixedWindowState | undefined, now: number, windowMs: number): number {
  const start = now - (now % windowMs);
  return state !== undefined && state.start > start ? state.start : start;
}

export const fixedWindow: Algorithm<FixedWindowState> = {
  name: 'fixed-window',
  tag: 'fw',
  code: CODE,
  hasBurst: false,
  keySuffixes: [''],
  keepsKeyTime: true,
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, { limit, windowMs }) {
    const start = windowStart(state, now, windowMs);
    const count = state !== undefined && state.start === start ? state.count : 0;
    const untilEnd = start + windowMs - Math.max(now, start);
    const allowed = count + cost <= limit;
    const retryAfterMs = allowed ? 0 : cost > limit ? NEVER : untilEnd;
    return new Evaluation(
      allowed,
      Math.max(0, limit - count),
      count > 0 ? untilEnd : 0,
      retryAfterMs,
      untilEnd,
      start,
    );
  },
  commit(state, now, cost, { windowMs }) {
    const start = windowStart(state, now, windowMs);
    if (state === undefined) return { start, count: cost };
    state.count = state.start === start ? state.count + cost : cost;
    state.start = start;
    return state;
  },
  settle(state, now, { token, reserved, actual }, { limit, windowMs }) {
    const delta = actual - reserved;
    const start = windowStart(state, now, windowMs);
    if (token !== start && delta < 0) return undefined;
    const count = state !== undefined && state.start === start ? state.count : 0;
    return {
      state: { start, count: adjust(count, delta, 2 * limit) },
      ttlMs: start + windowMs - Math.max(now, start),
    };
  },
  lua: `
local function fixedWindowCommit(k, cost, start, count, untilEnd)
  put(k, fmt(start) .. ':' .. fmt(count + cost), untilEnd)
end

EVALUATORS[${CODE}] = function(k, L, W, B, cost)
  local start, at = now - now % W, now
  local count = 0
  local stored = get(k)
  if stored then
    local s, c = match(stored, '^(%d+):(%d+)$')
    -- As strings: fmt(start) is remembered, a tonumber is a strtod.
    if s == fmt(start) then
      count = tonumber(c)
    elseif tonumber(s) > start then
      -- A stamp behind the key's window (see windowStart above): it counts in that window.
      start, count = tonumber(s), tonumber(c)
      at = start
    end
  end
  local untilEnd = start + W - at
  local allowed = count + cost <= L
  local retry = 0
  if not allowed then retry = (cost > L) and NEVER or untilEnd end
  local reset = 0
  if count > 0 then reset = untilEnd end
  return allowed, max(0, L - count), reset, retry, untilEnd, start, fixedWindowCommit, start, count, untilEnd
end

SETTLERS[${CODE}] = function(k, L, W, B, token, reserved, delta)
  local start, at = now - now % W, now
  local count = 0
  local stored = get(k)
  if stored then
    local s, c = match(stored, '^(%d+):(%d+)$')
    if s == fmt(start) then
      count = tonumber(c)
    elseif tonumber(s) > start then
      start, count = tonumber(s), tonumber(c)
      at = start
    end
  end
  -- A refund for a window that is over gives nothing back: its units were counted there.
  if token ~= start and delta < 0 then return end
  count = adjust(count, delta, 2 * L)
  put(k, fmt(start) .. ':' .. fmt(count), start + W - at)
end`,
};
