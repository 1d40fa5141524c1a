/**
 * Assembles the one Lua script behind every Redis operation. The preamble, the all-or-nothing
 * driver, settling and the override plumbing live here once; each algorithm contributes only its
 * evaluator and settler.
 *
 * ARGV[1] is the mode. Modes on one user key (every key shares its hash tag, so one slot):
 *   'c' check, 'p' peek: KEYS = the key's override key, then each rule's keys in rule order.
 *       ARGV: mode, cost, now (ms, or -1 for the server's TIME), seen, rule count, then per rule:
 *       algorithm code, limit, windowMs, capacity, token (0). `seen` is the override the caller
 *       knows ('' for none, '*' to skip the comparison).
 *       Reply: if the key's override is not `seen`, { 'override', current ('' for none) } and
 *       nothing is evaluated. Otherwise per rule allowed (0/1), remaining, resetMs, retryAfterMs
 *       (-1: never), resetAfterMs, token; then, when `seen` is an override, its remaining ms (-1:
 *       no expiry).
 *   's' settle: KEYS as for a check. ARGV: mode, reserved cost, now, actual cost, rule count,
 *       then per rule: code, limit, windowMs, capacity, the token its check returned.
 *   'r' reset: KEYS as for a check; deletes the rule keys (not the override).
 *   'o' set override: KEYS = { override key }. ARGV: mode, ttl ms (0: none), now, value.
 *       Stores "expiresAt:value" (expiresAt 0: none) and replies expiresAt.
 *   'x' clear override: KEYS = { override key }.
 * Modes on the overrides registry (a hash of user key → "expiresAt:value"), KEYS = { registry }:
 *   'g' set: ARGV: mode, user key, '', "expiresAt:value". 'd' delete: ARGV: mode, user key.
 *   'l' list: ARGV: mode, '', now. Drops expired entries; replies key, remaining ms (-1), value, ...
 *
 * Expiry of overrides is judged on the script's `now`, so a caller's clock (tests) and the
 * server's agree; PX only reclaims the memory.
 */
import { createHash } from 'node:crypto';
import { ALGORITHM_NAMES, ALGORITHMS } from './index.js';

const algorithms = ALGORITHM_NAMES.map((name) => ALGORITHMS[name].lua.trim()).join('\n\n');
const keyCounts = ALGORITHM_NAMES.map((name) => {
  const algorithm = ALGORITHMS[name];
  return `[${algorithm.code}] = ${algorithm.keySuffixes.length}`;
}).join(', ');

export const CHECK_SCRIPT = `-- floodgate: every operation on one key, rules all or nothing
local mode = ARGV[1]
if mode == 'r' then return redis.call('DEL', unpack(KEYS, 2)) end
if mode == 'x' then return redis.call('DEL', KEYS[1]) end
if mode == 'g' then return redis.call('HSET', KEYS[1], ARGV[2], ARGV[4]) end
if mode == 'd' then return redis.call('HDEL', KEYS[1], ARGV[2]) end

-- The server's clock, so gateway pods whose own clocks disagree still decide identically.
local now = tonumber(ARGV[3])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Integers as exact decimal strings (tostring would switch to exponent notation past 14 digits).
local function fmt(x) return string.format('%d', x) end

-- An override as stored: "expiresAt:value"; returns the value and its remaining ms (-1: none),
-- or nothing once expired.
local function liveOverride(stored)
  local e, value = string.match(stored, '^(%d+):(.*)$')
  e = tonumber(e)
  if e == nil then return stored, -1 end
  if e == 0 then return value, -1 end
  if e > now then return value, e - now end
end

if mode == 'o' then
  local ttl = tonumber(ARGV[2])
  if ttl > 0 then
    redis.call('SET', KEYS[1], fmt(now + ttl) .. ':' .. ARGV[4], 'PX', ttl)
    return now + ttl
  end
  redis.call('SET', KEYS[1], '0:' .. ARGV[4])
  return 0
end
if mode == 'l' then
  local entries, reply = redis.call('HGETALL', KEYS[1]), {}
  for i = 1, #entries, 2 do
    local value, remaining = liveOverride(entries[i + 1])
    if value then
      reply[#reply + 1] = entries[i]
      reply[#reply + 1] = remaining
      reply[#reply + 1] = value
    else
      redis.call('HDEL', KEYS[1], entries[i])
    end
  end
  return reply
end

local NEVER = -1
local EVALUATORS, SETTLERS = {}, {}
local KEY_COUNTS = { ${keyCounts} }
-- Usage after a settle: a refund stops at zero, a charge at most (never lowering usage above it).
local function adjust(used, delta, most)
  if delta < 0 then return math.max(0, used + delta) end
  return math.max(used, math.min(used + delta, most))
end

${algorithms}

if mode == 's' then
  local reserved = tonumber(ARGV[2])
  local delta = tonumber(ARGV[4]) - reserved
  local k, a = 2, 6
  for i = 1, tonumber(ARGV[5]) do
    local code = tonumber(ARGV[a])
    SETTLERS[code](k, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), reserved, delta)
    k = k + KEY_COUNTS[code]
    a = a + 5
  end
  return 1
end

-- Check or peek. First: is the key's override still the one the caller decided with?
local seen, overrideRemaining = ARGV[4], nil
if seen ~= '*' then
  local current, remaining = '', -1
  local stored = redis.call('GET', KEYS[1])
  if stored then
    local value, left = liveOverride(stored)
    if value then current, remaining = value, left end
  end
  if current ~= seen then return { 'override', current } end
  if seen ~= '' then overrideRemaining = remaining end
end

local cost = tonumber(ARGV[2])
-- Evaluate every rule first; consume only if all of them allow the request.
local reply, commits, allAllowed = {}, {}, true
local k, a = 2, 6
for i = 1, tonumber(ARGV[5]) do
  local code = tonumber(ARGV[a])
  local allowed, remaining, reset, retry, resetAfter, token, commit =
    EVALUATORS[code](k, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), cost)
  local n = #reply
  reply[n + 1] = allowed and 1 or 0
  reply[n + 2] = remaining
  reply[n + 3] = reset
  reply[n + 4] = retry
  reply[n + 5] = resetAfter
  reply[n + 6] = token
  commits[i] = commit
  allAllowed = allAllowed and allowed
  k = k + KEY_COUNTS[code]
  a = a + 5
end
if allAllowed and mode == 'c' then
  for i = 1, #commits do commits[i]() end
end
if overrideRemaining then reply[#reply + 1] = overrideRemaining end
return reply
`;

export const CHECK_SCRIPT_SHA = createHash('sha1').update(CHECK_SCRIPT).digest('hex');
