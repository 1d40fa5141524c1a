/**
 * Reservoirs shared by every process on one Redis (see stores/types.ts SharedReservoirs), in one
 * Lua script of their own, sent through the same FCALL / EVALSHA / NOSCRIPT machinery as the
 * limiter's (calls.ts). Refreshes and increases are applied lazily, on the script's clock, when
 * a call finds their interval passed: no process has to be alive for the reservoir to refill.
 *
 * KEYS: the reservoir's hash. Fields: `v` the level (absent: no reservoir), `ri`/`ra` the refresh
 * interval and amount, `ii`/`ia`/`im` the increase interval, amount and maximum, `rt`/`it` when
 * the last refresh and increase were due. ARGV: mode, now (ms, -1 for the server's TIME), then:
 *   'i' init: clear (1: replace any state), then v, ri, ra, ii, ia, im ('' for none); an existing
 *       reservoir is kept unless clear (the first limiter of an id sets it, as in Bottleneck).
 *   'u' update: name, value pairs of the fields given ('' for none); a new interval or amount
 *       restarts both intervals from now.
 *   't' take: weight; takes it when the level allows.
 *   'a' add: amount.
 *   'b' give back: weight, the refresh a take answered; added unless a refresh came since (it
 *       already set the level afresh), never above the increase maximum.
 * Every mode answers { taken (0/1), level (-1: no reservoir), ms to the next refresh or increase
 * (-1: none), when the last refresh was due (-1: none) }, after the operation.
 */
import { standaloneScript } from './script.js';

const BODY = `-- floodgate: a reservoir shared by every process on this Redis
local FIELDS = { 'v', 'ri', 'ra', 'ii', 'ia', 'im', 'rt', 'it' }

local function read(key)
  local values, r = redis.call('HMGET', key, unpack(FIELDS)), {}
  for i, name in ipairs(FIELDS) do r[name] = tonumber(values[i]) end
  return r
end

local function write(key, r)
  local set, gone = {}, {}
  for _, name in ipairs(FIELDS) do
    if r[name] == nil then gone[#gone + 1] = name
    else
      set[#set + 1] = name
      set[#set + 1] = string.format('%.17g', r[name])
    end
  end
  if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
  if #set > 0 then redis.call('HSET', key, unpack(set)) end
end

-- The refreshes and increases whose time came, applied in one step.
local function catch_up(r, now)
  if r.ri and r.ra and r.rt and now >= r.rt + r.ri then
    r.v = r.ra
    r.rt = r.rt + math.floor((now - r.rt) / r.ri) * r.ri
  end
  if r.ii and r.ia and r.it and now >= r.it + r.ii then
    local periods = math.floor((now - r.it) / r.ii)
    local level = r.v or 0
    local raise = periods * r.ia
    if r.im then raise = math.min(raise, r.im - level) end
    if raise > 0 then r.v = level + raise end
    r.it = r.it + periods * r.ii
  end
end

local function next_ms(r, now)
  local soonest = -1
  if r.ri and r.ra and r.rt then soonest = r.rt + r.ri - now end
  if r.ii and r.ia and r.it then
    local at = r.it + r.ii - now
    if soonest < 0 or at < soonest then soonest = at end
  end
  return soonest
end

local function answer(r, taken, now)
  return { taken, r.v and string.format('%.17g', r.v) or '-1', string.format('%d', next_ms(r, now)),
    string.format('%d', r.rt or -1) }
end

local function run(KEYS, ARGV)
  local key, mode, now = KEYS[1], ARGV[1], tonumber(ARGV[2])
  if now < 0 then
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  if mode == 'i' then
    if ARGV[3] ~= '1' and redis.call('EXISTS', key) == 1 then
      local r = read(key)
      catch_up(r, now)
      write(key, r)
      return answer(r, 1, now)
    end
    local r = { v = tonumber(ARGV[4]), ri = tonumber(ARGV[5]), ra = tonumber(ARGV[6]),
      ii = tonumber(ARGV[7]), ia = tonumber(ARGV[8]), im = tonumber(ARGV[9]), rt = now, it = now }
    redis.call('DEL', key)
    write(key, r)
    return answer(r, 1, now)
  end
  local r = read(key)
  catch_up(r, now)
  local taken = 1
  if mode == 'u' then
    local restart = false
    for i = 3, #ARGV - 1, 2 do
      r[ARGV[i]] = tonumber(ARGV[i + 1])
      if ARGV[i] ~= 'v' then restart = true end
    end
    if restart then r.rt, r.it = now, now end
  elseif mode == 't' then
    local weight = tonumber(ARGV[3])
    if r.v then
      if r.v >= weight then r.v = r.v - weight else taken = 0 end
    end
  elseif mode == 'a' then
    r.v = (r.v or 0) + tonumber(ARGV[3])
  elseif mode == 'b' then
    if r.v and string.format('%d', r.rt or -1) == ARGV[4] then
      local level = r.v + tonumber(ARGV[3])
      if r.im then level = math.min(level, math.max(r.im, r.v)) end
      r.v = level
    end
  else
    return redis.error_reply('floodgate reservoirs: unknown mode ' .. tostring(mode))
  end
  write(key, r)
  return answer(r, taken, now)
end
`;

/** The reservoir script as EVAL runs it and as a function library (named after its content). */
export const RESERVOIR_SCRIPT = standaloneScript('reservoir', BODY);
