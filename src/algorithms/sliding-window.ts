/**
 * Sliding window counter (the two-counter approximation popularised by Cloudflare): the
 * previous aligned window's count, weighted by how much of it still overlaps the sliding
 * window, plus the current window's count.
 *
 * All arithmetic is on integers scaled by `windowMs` (`count × W`), so the TypeScript and Lua
 * twins compute bit-identical results and no fraction is ever rounded differently.
 *
 * Settling adjusts the count of the window the reservation was counted in: the current one, or
 * the previous one once the window has turned (where it still weighs on the sliding window).
 * Older than that, a refund gives nothing back and a charge is added to the current window.
 *
 * State: the current window's start, its count and the previous window's count.
 * Redis: one string "start:current:previous".
 */
import { type Algorithm, adjust, Evaluation, NEVER } from './types.js';

export interface SlidingWindowState {
  start: number;
  current: number;
  previous: number;
}

/** The Lua dispatch code: `EVALUATORS[2]`, `SETTLERS[2]` and the rule sets a store sends. */
const CODE = 2;

export const slidingWindow: Algorithm<SlidingWindowState> = {
  name: 'sliding-window',
  tag: 'sw',
  code: CODE,
  hasBurst: false,
  keySuffixes: [''],
  keepsKeyTime: true,
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, stamp, cost, { limit: L, windowMs: W }) {
    const now = timeOf(state, stamp);
    const { start, current, previous } = windowsAt(state, now, W);
    const elapsed = now - start;
    // Units in use, scaled by W: current × W + previous × (W − elapsed).
    const used = current * W + previous * (W - elapsed);
    const allowed = used + cost * W <= L * W;
    let resetMs = 0;
    if (current > 0) resetMs = start + 2 * W - now;
    else if (previous > 0) resetMs = start + W - now;
    let retryAfterMs = 0;
    if (!allowed) {
      if (cost > L) {
        retryAfterMs = NEVER;
      } else {
        // Earliest offset in this window where the previous window's weight has shrunk enough.
        const freeNow =
          current + cost <= L && previous > 0 ? Math.floor(((L - current - cost) * W) / previous) : 0;
        if (freeNow > 0) {
          retryAfterMs = W - freeNow - elapsed;
        } else {
          // Not in this window: in the next one, this window's count becomes the weighted one.
          const offset = current > 0 ? Math.max(0, W - Math.floor(((L - cost) * W) / current)) : 0;
          retryAfterMs = W - elapsed + offset;
        }
      }
    }
    const resetAfterMs = start + 2 * W - now;
    const remaining = Math.max(0, Math.floor((L * W - used) / W));
    return new Evaluation(allowed, remaining, resetMs, retryAfterMs, resetAfterMs, start);
  },
  commit(state, stamp, cost, { windowMs: W }) {
    const now = timeOf(state, stamp);
    const start = now - (now % W);
    if (state === undefined) return { start, current: cost, previous: 0 };
    if (state.start === start) {
      state.current += cost;
    } else {
      state.previous = state.start === start - W ? state.current : 0;
      state.current = cost;
      state.start = start;
    }
    return state;
  },
  settle(state, stamp, { token, reserved, actual }, { limit: L, windowMs: W }) {
    const now = timeOf(state, stamp);
    const delta = actual - reserved;
    const { start, current, previous } = windowsAt(state, now, W);
    let next: SlidingWindowState;
    if (token === start - W) next = { start, current, previous: adjust(previous, delta, 2 * L) };
    else if (token === start || delta > 0) next = { start, current: adjust(current, delta, 2 * L), previous };
    else return undefined;
    return { state: next, ttlMs: start + 2 * W - now };
  },
  lua: `
-- The current window's start and the counts of it and of the previous window, as of now.
-- Also the time to judge the key at: never before its stored window (see timeOf in
-- sliding-window.ts).
local function windowsAt(k, W)
  local start, at = now - now % W, now
  local current, previous = 0, 0
  local stored = get(k)
  if stored then
    local s, c, p = match(stored, '^(%d+):(%d+):(%d+)$')
    -- As strings, like fixed window's: fmt remembers both starts, a tonumber is a strtod.
    if s == fmt(start) then
      current, previous = tonumber(c), tonumber(p)
    elseif s == fmt(start - W) then
      previous = tonumber(c)
    elseif tonumber(s) > start then
      start, current, previous = tonumber(s), tonumber(c), tonumber(p)
      at = start
    end
  end
  return start, current, previous, at
end

local function slidingWindowCommit(k, cost, start, current, previous, resetAfter)
  put(k, fmt(start) .. ':' .. fmt(current + cost) .. ':' .. fmt(previous), resetAfter)
end

EVALUATORS[${CODE}] = function(k, L, W, B, cost)
  local start, current, previous, at = windowsAt(k, W)
  local elapsed = at - start
  local used = current * W + previous * (W - elapsed)
  local allowed = used + cost * W <= L * W
  local reset = 0
  if current > 0 then reset = start + 2 * W - at elseif previous > 0 then reset = start + W - at end
  local retry = 0
  if not allowed then
    if cost > L then
      retry = NEVER
    else
      local freeNow = 0
      if current + cost <= L and previous > 0 then freeNow = floor(((L - current - cost) * W) / previous) end
      if freeNow > 0 then
        retry = W - freeNow - elapsed
      else
        local offset = 0
        if current > 0 then offset = max(0, W - floor(((L - cost) * W) / current)) end
        retry = W - elapsed + offset
      end
    end
  end
  local resetAfter = start + 2 * W - at
  return allowed, max(0, floor((L * W - used) / W)), reset, retry, resetAfter, start,
    slidingWindowCommit, start, current, previous, resetAfter
end

SETTLERS[${CODE}] = function(k, L, W, B, token, reserved, delta)
  local start, current, previous, at = windowsAt(k, W)
  if token == start - W then
    previous = adjust(previous, delta, 2 * L)
  elseif token == start or delta > 0 then
    current = adjust(current, delta, 2 * L)
  else
    return
  end
  put(k, fmt(start) .. ':' .. fmt(current) .. ':' .. fmt(previous), start + 2 * W - at)
end`,
};

/**
 * The time to judge a key in `state` at: never before its stored window, so a clock stamp a
 * little behind the one that opened it (another process's, see docs/algorithms.md) counts in
 * that window rather than starting an older one over it.
 */
function timeOf(state: SlidingWindowState | undefined, stamp: number): number {
  return state !== undefined && state.start > stamp ? state.start : stamp;
}

/** The current window's start and the counts of it and of the previous window, as of `now`. */
function windowsAt(state: SlidingWindowState | undefined, now: number, W: number): SlidingWindowState {
  const start = now - (now % W);
  if (state?.start === start) return { start, current: state.current, previous: state.previous };
  if (state?.start === start - W) return { start, current: 0, previous: state.current };
  return { start, current: 0, previous: 0 };
}
