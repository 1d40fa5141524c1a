/**
 * GCRA, the generic cell rate algorithm: one stored value per key, the theoretical arrival
 * time (TAT). A request of cost c is allowed when `max(TAT, now) + c·T − now ≤ burst·T`, with
 * emission interval `T = window / limit`; then `TAT = max(TAT, now) + c·T`.
 *
 * To stay exact, `TAT − now` is computed in units of 1/limit ms (so T = `windowMs` units) and
 * the TAT is stored as whole milliseconds plus a remainder below `limit`. With the same
 * parameters this admits exactly what the token bucket admits: `TAT − now` is the bucket's
 * missing tokens, and the shared property test holds the two to that.
 *
 * Settling moves the TAT: back for a refund (never before now), forward for a charge (at most
 * two bursts ahead: one burst of debt), exactly as the token bucket gives and takes tokens.
 *
 * State: TAT as "ms" or "ms:remainder". Redis: one string.
 */
import { type Algorithm, adjust, Evaluation, NEVER } from './types.js';

export interface GcraState {
  /** Whole milliseconds of the TAT. */
  tat: number;
  /** The TAT's fraction of a millisecond, in units of 1/limit ms (0 <= remainder < limit). */
  remainder: number;
}

/**
 * How far the TAT is ahead of now, in units of 1/L ms; never more than two full buckets (a full
 * one of debt): it could only be more if the clock stepped back.
 */
function aheadAt(state: GcraState | undefined, now: number, L: number, full: number): number {
  if (state === undefined || state.tat < now || (state.tat === now && state.remainder === 0)) return 0;
  if (state.tat - now > Math.ceil((2 * full) / L)) return 2 * full;
  return Math.min(2 * full, (state.tat - now) * L + state.remainder);
}

/** The state whose TAT is `ahead` units after `now`, and how long it matters. */
function stateAt(now: number, ahead: number, L: number): { state: GcraState; ttlMs: number } {
  const whole = Math.floor(ahead / L);
  return { state: { tat: now + whole, remainder: ahead - whole * L }, ttlMs: Math.ceil(ahead / L) };
}

/** The Lua dispatch code: `EVALUATORS[4]`, `SETTLERS[4]` and the rule sets a store sends. */
const CODE = 4;

export const gcra: Algorithm<GcraState> = {
  name: 'gcra',
  tag: 'gc',
  code: CODE,
  hasBurst: true,
  keySuffixes: [''],
  keepsKeyTime: false,
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, { limit: L, windowMs: W, capacity: B }) {
    const full = B * W;
    const need = cost * W;
    const ahead = aheadAt(state, now, L, full);
    const allowed = ahead + need <= full;
    const next = ahead + need;
    const resetAfterMs = Math.ceil(next / L);
    const remaining = Math.max(0, Math.floor((full - ahead) / W));
    const retryAfterMs = allowed ? 0 : cost > B ? NEVER : Math.ceil((next - full) / L);
    return new Evaluation(allowed, remaining, Math.ceil(ahead / L), retryAfterMs, resetAfterMs, 0);
  },
  commit(state, now, cost, { limit: L, windowMs: W, capacity: B }, spare) {
    const ahead = aheadAt(state, now, L, B * W) + cost * W;
    const whole = Math.floor(ahead / L);
    const next = state ?? spare;
    if (next === undefined) return { tat: now + whole, remainder: ahead - whole * L };
    next.tat = now + whole;
    next.remainder = ahead - whole * L;
    return next;
  },
  settle(state, now, { reserved, actual }, { limit: L, windowMs: W, capacity: B }) {
    const full = B * W;
    const ahead = adjust(aheadAt(state, now, L, full), (actual - reserved) * W, 2 * full);
    return ahead === 0 ? 'delete' : stateAt(now, ahead, L);
  },
  lua: `
-- How far the TAT is ahead of now, in units of 1/L ms, at most two full buckets (see aheadAt).
local function gcraAhead(k, L, full)
  local stored = get(k)
  if not stored then return 0 end
  local tat, rem = match(stored, '^(%d+):?(%d*)$')
  tat = tonumber(tat)
  rem = tonumber(rem) or 0
  if tat < now or (tat == now and rem == 0) then return 0 end
  if tat - now > ceil(2 * full / L) then return 2 * full end
  return min(2 * full, (tat - now) * L + rem)
end

-- Stores the TAT that is ahead units after now, for as long as it matters.
local function gcraStore(k, L, ahead)
  local whole = floor(ahead / L)
  local value = fmtFresh(now + whole)
  local rem = ahead - whole * L
  if rem > 0 then value = value .. ':' .. fmt(rem) end
  put(k, value, ceil(ahead / L))
end

local function gcraCommit(k, cost, L, nextAhead)
  gcraStore(k, L, nextAhead)
end

EVALUATORS[${CODE}] = function(k, L, W, B, cost)
  local full = B * W
  local need = cost * W
  local ahead = gcraAhead(k, L, full)
  local allowed = ahead + need <= full
  local nextAhead = ahead + need
  local retry = 0
  if not allowed then
    if cost > B then retry = NEVER else retry = ceil((nextAhead - full) / L) end
  end
  return allowed, max(0, floor((full - ahead) / W)), ceil(ahead / L), retry, ceil(nextAhead / L), 0,
    gcraCommit, L, nextAhead
end

SETTLERS[${CODE}] = function(k, L, W, B, token, reserved, delta)
  local full = B * W
  local ahead = adjust(gcraAhead(k, L, full), delta * W, 2 * full)
  if ahead == 0 then del(k) else gcraStore(k, L, ahead) end
end`,
};
