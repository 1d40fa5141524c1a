/**
 * A fixed-window rule counted by calendar period (`period: 'month'` and the like, see
 * src/calendar/): fixed-window's counting (fixed-window.ts) in the period that contains `now`,
 * whose end is the exact reset time. Its own code and key tag, so a rule that moves between a
 * window and a period never reads the other's count.
 *
 * In Redis the period is found on the server's clock: the store sends, as the rule's window,
 * the starts of the periods before, around and after its own clock ("p0/p1/p2/p3", see
 * stores/redis/rule-layout.ts), and the script takes the one that holds its `now`. Clocks a
 * whole period apart fall back to the nearest period sent.
 *
 * State: as fixed-window's, "start:count", expiring at the period's end.
 */
import {
  commitWindow,
  evaluateWindow,
  type FixedWindowState,
  settleWindow,
  windowLua,
} from './fixed-window.js';
import type { Algorithm, AlgorithmParams, Periods } from './types.js';

const CODE = 7;

function periodsOf(params: AlgorithmParams): Periods {
  if (params.periods === undefined) throw new Error('floodgate: a calendar rule without its periods');
  return params.periods;
}

export const calendarWindow: Algorithm<FixedWindowState> = {
  name: 'fixed-window',
  tag: 'cal',
  code: CODE,
  hasBurst: false,
  keySuffixes: [''],
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, params) {
    const { start, end } = periodsOf(params).at(now);
    return evaluateWindow(state, now, cost, params.limit, start, end);
  },
  commit(state, now, cost, params) {
    return commitWindow(state, periodsOf(params).at(now).start, cost);
  },
  settle(state, now, settlement, params) {
    const { start, end } = periodsOf(params).at(now);
    return settleWindow(state, now, settlement, params.limit, start, end);
  },
  lua: `
-- The period holding now among the starts W = { p0, p1, p2, p3 } the client sent; at least a
-- millisecond left, so a clock past them all still writes a valid ttl.
local function calendarPeriod(W)
  local i = now < W[2] and 1 or now < W[3] and 2 or 3
  return W[i], max(1, W[i + 1] - now)
end
${windowLua(CODE, 'calendarWindowCommit', 'local start, untilEnd = calendarPeriod(W)').trim()}`,
};
