/**
 * The scheduler's queues on Redis in one Lua script of their own (see stores/queue-types.ts),
 * sent through the same FCALL / EVALSHA / NOSCRIPT machinery as the limiter's (calls.ts).
 *
 * KEYS (one hash tag, the scheduler key's head): the queue (a sorted set), the key's state (a
 * hash: s entry sequence, vt virtual time of the last grant, g and u grants and units granted,
 * p paused until, br the latest budget reset, v head version, hd the head, a:<participant> its
 * liveness), the tenants' virtual finish times (a hash), the learned budgets (a hash: name ->
 * "remaining,grants,units,resetAt").
 * ARGV: mode, now (ms, -1 for the server's TIME), participant, channel, the key head (named in
 * news), then per mode:
 *   'e' enqueue: priority, tenant, cost, then budgets to hold as for 'b'. Reply: id, then the
 *       turn (version, head, waitMs, queued).
 *   'l' leave: id, granted (1/0), then budgets to hold as for 'b'. Reply: grants, units, then the turn.
 *   'h' heartbeat (renews the participant's liveness): the turn.
 *   'w' wake: tells the turn again. 'x' close: the participant's ids; drops them and its liveness.
 *   'p' pause: ms, source. Reply: the pause's end. 'b' learn: per budget name, remaining,
 *       grants, units, resetMs (from now).
 * An entry is "<seq:12 digits>|<participant>|<cost>|<tenant>" scored priority × 2^49 + its
 * virtual start time, so ties fall to the sequence (FIFO). News on the channel: a changed head
 * "t|<key head>|<version>|<waitMs>|<queued>|<head>" ('w|…' when told again unchanged), a pause "p|<key head>|<until>|<ms>|<participant>|<source>".
 * Every write renews the keys' expiry to a minute past the pause and the budgets' reset.
 */
import { LIVENESS_MS, PRIORITY_SHIFT, SAME_RESET_MS } from '../queue-types.js';
import { standaloneScript } from './script.js';

const BODY = `-- floodgate: the scheduler's queue of one key
local SHIFT, LIVENESS, IDLE_MS, DEAD_DROPS, SAME_RESET = ${PRIORITY_SHIFT}, ${LIVENESS_MS}, 60000, 1000, ${SAME_RESET_MS}
local q, h, t, b, now, me, channel, name, args

local function int(x) return string.format('%d', x) end
local function num(key, field) return tonumber(redis.call('HGET', key, field) or '0') end

-- The first entry whose participant is alive; a dead one's entries are dropped on the way.
local function firstLive()
  for _ = 1, DEAD_DROPS do
    local first = redis.call('ZRANGE', q, 0, 0)[1]
    if not first then return nil end
    local owner = string.match(first, '^[^|]*|([^|]*)|')
    if num(h, 'a:' .. owner) > now then return first end
    redis.call('ZREM', q, first)
    redis.call('HDEL', h, 'a:' .. owner)
  end
  return redis.call('ZRANGE', q, 0, 0)[1]
end

-- How long the head must wait: the pause, or a learned budget it would overspend (until its reset).
local function waitFor(first)
  if not first then return 0 end
  local wait = math.max(0, num(h, 'p') - now)
  local budgets = redis.call('HGETALL', b)
  local cost = tonumber(string.match(first, '^[^|]*|[^|]*|([^|]*)|'))
  for i = 1, #budgets, 2 do
    local remaining, grants, units, resetAt = string.match(budgets[i + 1], '^(-?%d+),(%d+),(%d+),(%d+)$')
    resetAt = tonumber(resetAt)
    if resetAt <= now then
      redis.call('HDEL', b, budgets[i])
    else
      local requests = budgets[i] == 'requests'
      local used = requests and num(h, 'g') - tonumber(grants) or num(h, 'u') - tonumber(units)
      if tonumber(remaining) - used < (requests and 1 or cost) then wait = math.max(wait, resetAt - now) end
    end
  end
  return wait
end

-- The turn after a change, told to every participant when the head changed (or when forced).
local function finish(force)
  local first = firstLive()
  local head = first or ''
  local version = num(h, 'v')
  local changed = head ~= (redis.call('HGET', h, 'hd') or '')
  if changed then
    version = redis.call('HINCRBY', h, 'v', 1)
    redis.call('HSET', h, 'hd', head)
  end
  local queued = redis.call('ZCARD', q)
  local wait = waitFor(first)
  if changed or force then
    redis.call('PUBLISH', channel, (changed and 't|' or 'w|') .. name .. '|' .. version .. '|' .. wait .. '|' .. queued .. '|' .. head)
  end
  if not first then
    redis.call('DEL', t)
    redis.call('HSET', h, 'vt', 0)
  end
  local ttl = math.max(num(h, 'p'), num(h, 'br')) - now + IDLE_MS
  for _, key in ipairs({ q, h, t, b }) do redis.call('PEXPIRE', key, int(math.max(ttl, IDLE_MS))) end
  return { version, head, wait, queued }
end

-- Holds the budgets given from args[a] on (name, remaining, grants, units, resetMs each); true if any.
-- Of two in one upstream window (resets within SAME_RESET) the lower estimate stands, whatever the
-- grant order (calls reach the upstream out of it); a later window's replaces, an earlier one's is over.
local function hold(a)
  local grants, units, held = num(h, 'g'), num(h, 'u'), false
  while args[a] do
    held = true
    local budget, remaining, g, u = args[a], tonumber(args[a + 1]), tonumber(args[a + 2]), tonumber(args[a + 3])
    local resetAt = now + tonumber(args[a + 4])
    local requests = budget == 'requests'
    local keep = false
    local current = redis.call('HGET', b, budget)
    if current then
      local hr, hg, hu, hReset = string.match(current, '^(-?%d+),(%d+),(%d+),(%d+)$')
      hReset = tonumber(hReset)
      if hReset > now then
        local heldLeft = tonumber(hr) - (requests and grants - tonumber(hg) or units - tonumber(hu))
        local nextLeft = remaining - (requests and grants - g or units - u)
        keep = resetAt < hReset - SAME_RESET or (resetAt <= hReset + SAME_RESET and heldLeft <= nextLeft)
      end
    end
    if not keep then
      redis.call('HSET', b, budget, int(remaining) .. ',' .. int(g) .. ',' .. int(u) .. ',' .. int(resetAt))
      if resetAt > num(h, 'br') then redis.call('HSET', h, 'br', int(resetAt)) end
    end
    a = a + 5
  end
  return held
end

-- The turn after budgets were held: told again when they now hold the head back.
local function finishHeld(held)
  if not held then return finish(false) end
  local first = firstLive()
  return finish(first ~= nil and waitFor(first) > 0)
end

local function run(KEYS, ARGV)
  args = ARGV
  q, h, t, b = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
  local mode = ARGV[1]
  now = tonumber(ARGV[2])
  if now < 0 then
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  me, channel, name = ARGV[3], ARGV[4], ARGV[5]
  redis.call('HSET', h, 'a:' .. me, int(now + LIVENESS))
  if mode == 'e' then
    local priority, tenant, cost = tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
    local held = hold(9)
    local seq = redis.call('HINCRBY', h, 's', 1)
    local start = math.max(num(h, 'vt'), num(t, tenant))
    redis.call('HSET', t, tenant, int(start + cost))
    local id = string.format('%012d', seq) .. '|' .. me .. '|' .. int(cost) .. '|' .. tenant
    redis.call('ZADD', q, int(priority * SHIFT + start), id)
    local turn = finishHeld(held)
    return { id, turn[1], turn[2], turn[3], turn[4] }
  elseif mode == 'l' then
    local id = ARGV[6]
    local held = hold(8)
    local score = redis.call('ZSCORE', q, id)
    if score then redis.call('ZREM', q, id) end
    if ARGV[7] == '1' then
      redis.call('HINCRBY', h, 'g', 1)
      redis.call('HINCRBY', h, 'u', tonumber(string.match(id, '^[^|]*|[^|]*|([^|]*)|')))
      local start = score and tonumber(score) % SHIFT or 0
      if start > num(h, 'vt') then redis.call('HSET', h, 'vt', int(start)) end
    end
    local turn = finishHeld(held)
    return { num(h, 'g'), num(h, 'u'), turn[1], turn[2], turn[3], turn[4] }
  elseif mode == 'h' then
    return finish(false)
  elseif mode == 'w' then
    return finish(redis.call('ZCARD', q) > 0)
  elseif mode == 'x' then
    for i = 6, #ARGV do redis.call('ZREM', q, ARGV[i]) end
    redis.call('HDEL', h, 'a:' .. me)
    return finish(false)
  elseif mode == 'p' then
    local untilMs = math.max(num(h, 'p'), now + tonumber(ARGV[6]))
    redis.call('HSET', h, 'p', int(untilMs))
    redis.call('PUBLISH', channel, 'p|' .. name .. '|' .. int(untilMs) .. '|' .. int(untilMs - now) .. '|' .. me .. '|' .. ARGV[7])
    finish(true)
    return untilMs
  elseif mode == 'b' then
    return finishHeld(hold(6))
  end
  return redis.error_reply('floodgate queue: unknown mode ' .. tostring(mode))
end
`;

/** The queue script as EVAL runs it and as a function library (named after its content). */
export const QUEUE_SCRIPT = standaloneScript('queue', BODY);
