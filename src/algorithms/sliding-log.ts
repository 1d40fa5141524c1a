/**
 * Sliding log: exact. A request at time t is admitted when the cost admitted in (t − W, t]
 * plus its own cost is at most `limit`, so no interval of length W ever holds more than
 * `limit`. Memory is O(limit) per key, which is why `limit` is capped (see `maxLimit`).
 *
 * Redis: a sorted set of entries scored by time, plus a small "sum:seq" string. Members are a
 * per-key sequence number (with ":cost" when cost > 1), so two requests in the same
 * millisecond never collide and members stay small integers. The sum makes an admitted
 * request O(expired entries), not O(limit); denials and peeks write nothing.
 */
import { type Algorithm, NEVER } from './types.js';

export interface SlidingLogState {
  /** Entry times, oldest first. */
  readonly times: number[];
  /** Entry costs, parallel to `times`. */
  readonly costs: number[];
  /** Sum of `costs`. */
  readonly sum: number;
}

/** Largest sliding-log limit: every admitted unit may be one stored entry. */
export const SLIDING_LOG_MAX_LIMIT = 100_000;

export const slidingLog: Algorithm<SlidingLogState> = {
  name: 'sliding-log',
  tag: 'sl',
  code: 5,
  hasBurst: false,
  keySuffixes: ['', ':n'],
  maxLimit: SLIDING_LOG_MAX_LIMIT,
  evaluate(state, now, cost, { limit: L, windowMs: W }) {
    const times = state?.times ?? [];
    const costs = state?.costs ?? [];
    let sum = state?.sum ?? 0;
    const cutoff = now - W;
    let first = 0;
    while (first < times.length && (times[first] as number) <= cutoff) {
      sum -= costs[first] as number;
      first++;
    }
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
    return {
      allowed,
      remaining: Math.max(0, L - sum),
      resetMs: newest === undefined ? 0 : newest + W - now,
      retryAfterMs,
      resetAfterMs: W,
      commit() {
        times.splice(0, first);
        costs.splice(0, first);
        times.push(now);
        costs.push(cost);
        return { times, costs, sum: sum + cost };
      },
      ttlMs: W,
    };
  },
  lua: `
local function logEntryCost(member)
  local c = string.match(member, ':(%d+)$')
  if c then return tonumber(c) end
  return 1
end

EVALUATORS[5] = function(k, L, W, B, cost)
  local log, metaKey = KEYS[k], KEYS[k + 1]
  local cutoff = fmt(now - W)
  local sum, seq = 0, 0
  local meta = redis.call('GET', metaKey)
  if meta and redis.call('EXISTS', log) == 1 then
    local s, q = string.match(meta, '^(%d+):(%d+)$')
    sum, seq = tonumber(s), tonumber(q)
  else
    -- One of the two keys was lost (eviction, or expiry observed between them): rebuild the
    -- sum and the sequence from the entries themselves.
    for _, member in ipairs(redis.call('ZRANGE', log, 0, -1)) do
      sum = sum + logEntryCost(member)
      seq = math.max(seq, tonumber(string.match(member, '^(%d+)')) + 1)
    end
  end
  local expired = redis.call('ZRANGEBYSCORE', log, '-inf', cutoff)
  for _, member in ipairs(expired) do sum = sum - logEntryCost(member) end
  local allowed = sum + cost <= L
  local retry = 0
  if not allowed then
    if cost > L then
      retry = NEVER
    else
      local live = redis.call('ZRANGEBYSCORE', log, '(' .. cutoff, '+inf', 'WITHSCORES')
      local excess, freed = sum + cost - L, 0
      for i = 1, #live, 2 do
        freed = freed + logEntryCost(live[i])
        if freed >= excess then retry = tonumber(live[i + 1]) + W - now break end
      end
    end
  end
  local reset = 0
  local newest = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
  if newest[2] and tonumber(newest[2]) > now - W then reset = tonumber(newest[2]) + W - now end
  return allowed, math.max(0, L - sum), reset, retry, W, function()
    if #expired > 0 then redis.call('ZREMRANGEBYSCORE', log, '-inf', cutoff) end
    local member = fmt(seq)
    if cost > 1 then member = member .. ':' .. fmt(cost) end
    redis.call('ZADD', log, fmt(now), member)
    redis.call('PEXPIRE', log, W)
    redis.call('SET', metaKey, fmt(sum + cost) .. ':' .. fmt(seq + 1), 'PX', W)
  end
end`,
};
