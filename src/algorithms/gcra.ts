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
 * State: TAT as "ms" or "ms:remainder". Redis: one string.
 */
import { type Algorithm, NEVER } from './types.js';

export interface GcraState {
  /** Whole milliseconds of the TAT. */
  readonly tat: number;
  /** The TAT's fraction of a millisecond, in units of 1/limit ms (0 <= remainder < limit). */
  readonly remainder: number;
}

export const gcra: Algorithm<GcraState> = {
  name: 'gcra',
  tag: 'gc',
  code: 4,
  hasBurst: true,
  keySuffixes: [''],
  maxLimit: Number.MAX_SAFE_INTEGER,
  evaluate(state, now, cost, { limit: L, windowMs: W, capacity: B }) {
    const full = B * W;
    const need = cost * W;
    // How far the TAT is ahead of now, in units of 1/L ms; never more than a full bucket
    // (it could only be more if the clock stepped back).
    let ahead = 0;
    if (state !== undefined && (state.tat > now || (state.tat === now && state.remainder > 0))) {
      ahead =
        state.tat - now > Math.ceil(full / L)
          ? full
          : Math.min(full, (state.tat - now) * L + state.remainder);
    }
    const allowed = ahead + need <= full;
    const next = ahead + need;
    const whole = Math.floor(next / L);
    const resetAfterMs = Math.ceil(next / L);
    return {
      allowed,
      remaining: Math.floor((full - ahead) / W),
      resetMs: Math.ceil(ahead / L),
      retryAfterMs: allowed ? 0 : cost > B ? NEVER : Math.ceil((next - full) / L),
      resetAfterMs,
      commit: () => ({ tat: now + whole, remainder: next - whole * L }),
      ttlMs: resetAfterMs,
    };
  },
  lua: `
EVALUATORS[4] = function(k, L, W, B, cost)
  local key = KEYS[k]
  local full = B * W
  local need = cost * W
  local ahead = 0
  local stored = redis.call('GET', key)
  if stored then
    local tat, rem = string.match(stored, '^(%d+):?(%d*)$')
    tat = tonumber(tat)
    rem = tonumber(rem) or 0
    if tat > now or (tat == now and rem > 0) then
      if tat - now > math.ceil(full / L) then ahead = full else ahead = math.min(full, (tat - now) * L + rem) end
    end
  end
  local allowed = ahead + need <= full
  local nextAhead = ahead + need
  local whole = math.floor(nextAhead / L)
  local resetAfter = math.ceil(nextAhead / L)
  local retry = 0
  if not allowed then
    if cost > B then retry = NEVER else retry = math.ceil((nextAhead - full) / L) end
  end
  return allowed, math.floor((full - ahead) / W), math.ceil(ahead / L), retry, resetAfter, function()
    local rem = nextAhead - whole * L
    local value = fmt(now + whole)
    if rem > 0 then value = value .. ':' .. fmt(rem) end
    redis.call('SET', key, value, 'PX', resetAfter)
  end
end`,
};
