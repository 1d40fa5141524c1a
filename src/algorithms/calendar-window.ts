/**
 * A fixed-window rule counted by calendar period (`period: 'month'` and the like, see
 * src/calendar/): fixed-window's counting (fixed-window.ts) in the period that contains `now`,
 * whose end is the exact reset time. Its own code and key tag, so a rule that moves between a
 * window and a period never reads the other's count.
 *
 * Thresholds: the state also counts the thresholds already announced in its period, so each is
 * crossed once per period whatever refunds do to the count. An evaluation says which thresholds
 * its commit crosses (`crossed`); the commit records them, in the same atomic step.
 *
 * In Redis the period is found on the server's clock: the store sends, as the rule's window,
 * the starts of the periods before, around and after its own clock, then the threshold units
 * ("p0/p1/p2/p3/u1/u2...", see stores/redis/rule-layout.ts), and the script takes the period
 * that holds its `now`. Clocks a whole period apart fall back to the nearest period sent.
 *
 * State: "start:count" as fixed-window's, or "start:count:announced" once a threshold was
 * announced in the period; it expires at the period's end.
 */
import {
  commitWindow,
  evaluateWindow,
  type FixedWindowState,
  settleWindow,
  windowLua,
} from './fixed-window.js';
import { type Algorithm, type AlgorithmParams, Evaluation, type Periods } from './types.js';

const CODE = 7;

export interface CalendarState extends FixedWindowState {
  /** How many of the rule's thresholds were announced in the period starting at `start`. */
  announced?: number;
}

function periodsOf(params: AlgorithmParams): Periods {
  if (params.periods === undefined) throw new Error('floodgate: a calendar rule without its periods');
  return params.periods;
}

/** How many thresholds of `units` (ascending) a usage of `used` reaches. */
function reached(units: readonly number[], used: number): number {
  let count = 0;
  while (count < units.length && (units[count] as number) <= used) count++;
  return count;
}

/** Announced thresholds in `state` for the period starting at `start`. */
function announcedIn(state: CalendarState | undefined, start: number): number {
  return state !== undefined && state.start === start ? (state.announced ?? 0) : 0;
}

export const calendarWindow: Algorithm<CalendarState> = {
  name: 'fixed-window',
  tag: 'cal',
  code: CODE,
  hasBurst: false,
  keySuffixes: [''],
  // The script picks the period holding its own TIME among those sent: no stamp.
  keepsKeyTime: false,
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, params) {
    const { start, end } = periodsOf(params).at(now);
    const evaluation = evaluateWindow(state, now, cost, params.limit, start, end);
    const units = params.thresholdUnits;
    if (units === undefined || !evaluation.allowed) return evaluation;
    const count = state !== undefined && state.start === start ? state.count : 0;
    const before = announcedIn(state, start);
    const after = reached(units, count + cost);
    if (after <= before) return evaluation;
    // Bits before..after-1: the thresholds this check crosses.
    const crossed = 2 ** after - 2 ** before;
    const { allowed, remaining, resetMs, retryAfterMs, resetAfterMs, token } = evaluation;
    return new Evaluation(allowed, remaining, resetMs, retryAfterMs, resetAfterMs, token, false, crossed);
  },
  commit(state, now, cost, params) {
    const start = periodsOf(params).at(now).start;
    const units = params.thresholdUnits;
    const announced = announcedIn(state, start);
    const next: CalendarState = commitWindow(state, start, cost);
    if (units !== undefined) next.announced = Math.max(announced, reached(units, next.count));
    return next;
  },
  settle(state, now, settlement, params) {
    const { start, end } = periodsOf(params).at(now);
    const settled = settleWindow(state, now, settlement, params.limit, start, end);
    const announced = announcedIn(state, start);
    // settleWindow never deletes: it leaves a state or nothing.
    if (settled === undefined || settled === 'delete' || announced === 0) return settled;
    return { state: { ...settled.state, announced }, ttlMs: settled.ttlMs };
  },
  lua: `
-- The period holding now among the starts W = { p0, p1, p2, p3, thresholds... } the client
-- sent; at least a millisecond left, so a clock past them all still writes a valid ttl.
local function calendarPeriod(W)
  local i = now < W[2] and 1 or now < W[3] and 2 or 3
  return W[i], max(1, W[i + 1] - now)
end
-- The thresholds (W[5], W[6], ... in units, ascending) that a usage of used reaches past the
-- announced ones: this check's crossing, as a bit mask in CROSSED for the driver to reply.
-- Returns how many are announced once the check is committed.
local function crossings(W, used, announced)
  local reached = announced
  while W[reached + 5] and W[reached + 5] <= used do reached = reached + 1 end
  if reached > announced then CROSSED = 2 ^ reached - 2 ^ announced end
  return reached
end
local function announcedText(announced)
  if announced > 0 then return ':' .. fmt(announced) end
  return ''
end
${windowLua(CODE, 'calendarWindowCommit', 'local start, untilEnd = calendarPeriod(W)', true).trim()}`,
};
