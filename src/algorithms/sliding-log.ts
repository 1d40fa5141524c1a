/**
 * Sliding log: exact. A request at time t is admitted when the cost admitted in (t − W, t]
 * plus its own cost is at most `limit`, so no interval of length W ever holds more than
 * `limit`. Memory is O(limit) per key, which is why `limit` is capped (see `maxLimit`).
 *
 * Redis: a sorted set of entries scored by time, plus a small "sum:seq" string. Members are a
 * per-key sequence number (with ":cost" when cost > 1), so two requests in the same
 * millisecond never collide and members stay small integers. The sum makes an admitted
 * request O(expired entries), not O(limit); denials and peeks write nothing.
 *
 * Settling changes the recorded entry's cost (removing it at cost 0). The entry is found by its
 * time (the decision's token) and its reserved cost: entries of one time and one cost are
 * interchangeable, so any of them will do, and unlike the sequence number (which restarts when
 * the log is reset or expires) the pair never names an entry of another request by mistake, except
 * for one reset and re-admitted in the same millisecond. An entry that has left the window takes
 * no refund; a charge for it is recorded now. Debt: the live sum never exceeds twice the limit.
 */
import { type Algorithm, adjust, Evaluation, NEVER } from './types.js';

export interface SlidingLogState {
  /** Entry times, oldest first. */
  readonly times: number[];
  /** Entry costs, parallel to `times`. */
  readonly costs: number[];
  /** Sum of `costs`. */
  sum: number;
}

/** Largest sliding-log limit: every admitted unit may be one stored entry. */
export const SLIDING_LOG_MAX_LIMIT = 100_000;

/** Index of the first entry still inside the window ending at `now`. */
function firstLive(times: readonly number[], now: number, W: number): number {
  let first = 0;
  while (first < times.length && (times[first] as number) <= now - W) first++;
  return first;
}

function sumOf(costs: readonly number[], from: number, to: number): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += costs[i] as number;
  return sum;
}

/** The Lua dispatch code: `EVALUATORS[5]`, `SETTLERS[5]` and the rule sets a store sends. */
const CODE = 5;

export const slidingLog: Algorithm<SlidingLogState> = {
  name: 'sliding-log',
  tag: 'sl',
  code: CODE,
  hasBurst: false,
  keySuffixes: ['', ':n'],
  keepsKeyTime: false,
  maxLimit: SLIDING_LOG_MAX_LIMIT,
  evaluate(state, now, cost, { limit: L, windowMs: W }) {
    const times = state?.times ?? [];
    const costs = state?.costs ?? [];
    const first = firstLive(times, now, W);
    const sum = (state?.sum ?? 0) - sumOf(costs, 0, first);
    const allowed = sum + cost <= L;
    let retryAfterMs = 0;
    if (!allowed) {
      if (cost > L) {
        retryAfterMs = NEVER;
      } else {
        // Walk the live entries oldest first until enough cost has left the window.
        const excess = sum + cost - L;
        let freed = 0;
        let i = first;
        while (freed < excess) freed += costs[i++] as number;
        retryAfterMs = (times[i - 1] as number) + W - now;
      }
    }
    const newest = times.length > first ? (times[times.length - 1] as number) : undefined;
    const resetMs = newest === undefined ? 0 : newest + W - now;
    return new Evaluation(allowed, Math.max(0, L - sum), resetMs, retryAfterMs, W, now);
  },
  commit(state, now, cost, { windowMs: W }) {
    if (state === undefined) return { times: [now], costs: [cost], sum: cost };
    const { times, costs } = state;
    const first = firstLive(times, now, W);
    state.sum += cost - sumOf(costs, 0, first);
    times.splice(0, first);
    costs.splice(0, first);
    times.push(now);
    costs.push(cost);
    return state;
  },
  settle(state, now, { token, reserved, actual }, { limit: L, windowMs: W }) {
    const times = state?.times ?? [];
    const costs = state?.costs ?? [];
    const first = firstLive(times, now, W);
    const live = { times: times.slice(first), costs: costs.slice(first) };
    const sum = (state?.sum ?? 0) - sumOf(costs, 0, first);
    const delta = actual - reserved;
    const next = adjust(sum, delta, 2 * L);
    let index = -1;
    if (token > now - W) {
      index = live.times.findIndex((time, i) => time === token && live.costs[i] === reserved);
    }
    if (index >= 0) {
      const cost = reserved + next - sum;
      if (cost > 0) live.costs[index] = cost;
      else {
        live.times.splice(index, 1);
        live.costs.splice(index, 1);
      }
    } else if (next > sum) {
      live.times.push(now);
      live.costs.push(next - sum);
    } else if (first === 0) {
      return undefined;
    }
    if (live.times.length === 0) return 'delete';
    return { state: { ...live, sum: index >= 0 || next > sum ? next : sum }, ttlMs: W };
  },
  lua: `
local function logEntryCost(member)
  local c = match(member, ':(%d+)$')
  if c then return tonumber(c) end
  return 1
end

-- The log's stored sum (expired entries included) and next sequence number. The log is at
-- KEYS[k], its "sum:seq" string at KEYS[k + 1].
local function logMeta(k)
  local log = KEYS[k]
  local meta = get(k + 1)
  if meta and call('EXISTS', log) == 1 then
    local s, q = match(meta, '^(%d+):(%d+)$')
    return tonumber(s), tonumber(q)
  end
  -- One of the two keys was lost (eviction, or expiry observed between them): rebuild the
  -- sum and the sequence from the entries themselves.
  local sum, seq = 0, 0
  for _, member in ipairs(call('ZRANGE', log, 0, -1)) do
    sum = sum + logEntryCost(member)
    seq = max(seq, tonumber(match(member, '^(%d+)')) + 1)
  end
  return sum, seq
end

local function logMember(seq, cost)
  if cost == 1 then return fmt(seq) end
  return fmt(seq) .. ':' .. fmt(cost)
end

local function slidingLogCommit(k, cost, W, sum, seq, expired)
  local log = KEYS[k]
  if expired then call('ZREMRANGEBYSCORE', log, '-inf', fmt(now - W)) end
  call('ZADD', log, fmt(now), logMember(seq, cost))
  call('PEXPIRE', log, W)
  put(k + 1, fmt(sum + cost) .. ':' .. fmt(seq + 1), W)
end

EVALUATORS[${CODE}] = function(k, L, W, B, cost)
  local log = KEYS[k]
  local cutoff = fmt(now - W)
  local sum, seq = logMeta(k)
  local expired = call('ZRANGEBYSCORE', log, '-inf', cutoff)
  for _, member in ipairs(expired) do sum = sum - logEntryCost(member) end
  local allowed = sum + cost <= L
  local retry = 0
  if not allowed then
    if cost > L then
      retry = NEVER
    else
      local live = call('ZRANGEBYSCORE', log, '(' .. cutoff, '+inf', 'WITHSCORES')
      local excess, freed = sum + cost - L, 0
      for i = 1, #live, 2 do
        freed = freed + logEntryCost(live[i])
        if freed >= excess then retry = tonumber(live[i + 1]) + W - now break end
      end
    end
  end
  local reset = 0
  local newest = call('ZRANGE', log, -1, -1, 'WITHSCORES')
  if newest[2] and tonumber(newest[2]) > now - W then reset = tonumber(newest[2]) + W - now end
  return allowed, max(0, L - sum), reset, retry, W, now, slidingLogCommit, W, sum, seq, #expired > 0
end

SETTLERS[${CODE}] = function(k, L, W, B, token, reserved, delta)
  local log = KEYS[k]
  local cutoff = fmt(now - W)
  local sum, seq = logMeta(k)
  for _, member in ipairs(call('ZRANGEBYSCORE', log, '-inf', cutoff)) do
    sum = sum - logEntryCost(member)
  end
  call('ZREMRANGEBYSCORE', log, '-inf', cutoff)
  local nextSum = adjust(sum, delta, 2 * L)
  local found
  if token > now - W then
    for _, member in ipairs(call('ZRANGEBYSCORE', log, fmt(token), fmt(token))) do
      if logEntryCost(member) == reserved then found = member break end
    end
  end
  if found then
    call('ZREM', log, found)
    local cost = reserved + nextSum - sum
    if cost > 0 then call('ZADD', log, fmt(token), logMember(tonumber(match(found, '^(%d+)')), cost)) end
    sum = nextSum
  elseif nextSum > sum then
    call('ZADD', log, fmt(now), logMember(seq, nextSum - sum))
    seq = seq + 1
    sum = nextSum
  end
  if call('EXISTS', log) == 0 then
    del(k + 1)
  else
    call('PEXPIRE', log, W)
    put(k + 1, fmt(sum) .. ':' .. fmt(seq), W)
  end
end`,
};
