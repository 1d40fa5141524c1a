/**
 * Fixed window: at most `limit` units per window aligned to the clock (windows start at
 * multiples of `windowMs` since the epoch). Cheapest of all, and it keeps the well-known
 * boundary burst: up to 2 × limit can pass around a window edge.
 *
 * Settling adjusts the count while the reservation's window is current. Later, a refund gives
 * nothing back (the units were counted in a window that is over) and a charge is added to the
 * current window. Debt lasts until the window ends.
 *
 * The counting is written once for any window given by its start and end: calendar-window.ts
 * counts the same way in calendar periods.
 *
 * State: the window's start and the units admitted in it. Redis: one string "start:count".
 */
import { type Algorithm, adjust, Evaluation, NEVER, type Settlement, type SettleResult } from './types.js';

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

/** A check of `cost` against `limit` in the window [start, end) around `now`. */
export function evaluateWindow(
  state: FixedWindowState | undefined,
  now: number,
  cost: number,
  limit: number,
  start: number,
  end: number,
): Evaluation {
  const count = state !== undefined && state.start === start ? state.count : 0;
  const untilEnd = end - now;
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
}

/** `state` after `cost` is counted in the window starting at `start`. */
export function commitWindow(
  state: FixedWindowState | undefined,
  start: number,
  cost: number,
): FixedWindowState {
  if (state === undefined) return { start, count: cost };
  state.count = state.start === start ? state.count + cost : cost;
  state.start = start;
  return state;
}

/** A settlement in the window [start, end) around `now` (see the header). */
export function settleWindow(
  state: FixedWindowState | undefined,
  now: number,
  { token, reserved, actual }: Settlement,
  limit: number,
  start: number,
  end: number,
): SettleResult<FixedWindowState> {
  const delta = actual - reserved;
  if (token !== start && delta < 0) return undefined;
  const count = state !== undefined && state.start === start ? state.count : 0;
  return { state: { start, count: adjust(count, delta, 2 * limit) }, ttlMs: end - now };
}

/**
 * The Lua twin of the three functions above for algorithm `code`, whose window around `now` the
 * Lua in `bounds` sets as the locals `start` and `untilEnd` (from `W`, the rule's window). With
 * `thresholds`, the state keeps a third field, the thresholds announced in its window, which the
 * chunk's own `crossings(W, used, announced)` and `announcedText(announced)` read and write (see
 * calendar-window.ts).
 */
export function windowLua(
  code: number,
  commitName: string,
  bounds: string,
  thresholds = false,
  later?: string,
): string {
  const count = thresholds ? 'local count, announced = 0, 0' : 'local count = 0';
  const parse = thresholds
    ? "local s, c, a = match(stored, '^(%d+):(%d+):?(%d*)$')"
    : "local s, c = match(stored, '^(%d+):(%d+)$')";
  const read = thresholds ? 'count, announced = tonumber(c), tonumber(a) or 0' : 'count = tonumber(c)';
  const tail = thresholds ? ' .. announcedText(announced)' : '';
  const extra = thresholds ? ', announced' : '';
  // A key whose stored window is later than `now`'s (a clock stamp behind the one that opened it).
  const whenLater = later === undefined ? '' : `\n    elseif tonumber(s) > start then\n      ${later}\n   `;
  const cross = thresholds ? '\n  if allowed then announced = crossings(W, count + cost, announced) end' : '';
  return `
local function ${commitName}(k, cost, start, count, untilEnd${extra})
  put(k, fmt(start) .. ':' .. fmt(count + cost)${tail}, untilEnd)
end

EVALUATORS[${code}] = function(k, L, W, B, cost)
  ${bounds}
  ${count}
  local stored = get(k)
  if stored then
    ${parse}
    -- As strings: fmt(start) is remembered, a tonumber is a strtod.
    if s == fmt(start) then ${read}${whenLater} end
  end
  local allowed = count + cost <= L
  local retry = 0
  if not allowed then retry = (cost > L) and NEVER or untilEnd end
  local reset = 0
  if count > 0 then reset = untilEnd end${cross}
  return allowed, max(0, L - count), reset, retry, untilEnd, start, ${commitName}, start, count, untilEnd${extra}
end

SETTLERS[${code}] = function(k, L, W, B, token, reserved, delta)
  ${bounds}
  ${count}
  local stored = get(k)
  if stored then
    ${parse}
    if s == fmt(start) then ${read}${whenLater} end
  end
  -- A refund for a window that is over gives nothing back: its units were counted there.
  if token ~= start and delta < 0 then return end
  count = adjust(count, delta, 2 * L)
  put(k, fmt(start) .. ':' .. fmt(count)${tail}, untilEnd)
end`;
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
    return evaluateWindow(state, Math.max(now, start), cost, limit, start, start + windowMs);
  },
  commit(state, now, cost, { windowMs }) {
    return commitWindow(state, windowStart(state, now, windowMs), cost);
  },
  settle(state, now, settlement, { limit, windowMs }) {
    const start = windowStart(state, now, windowMs);
    return settleWindow(state, Math.max(now, start), settlement, limit, start, start + windowMs);
  },
  lua: windowLua(
    CODE,
    'fixedWindowCommit',
    'local start = now - now % W\n  local untilEnd = start + W - now',
    false,
    // A stamp behind the key's window (see windowStart above): it counts in that window.
    'start, count = tonumber(s), tonumber(c)\n      untilEnd = W',
  ),
};
