/**
 * Assembles the one Lua script that checks every rule of one key atomically. The preamble and
 * the all-or-nothing driver live here once; each algorithm contributes only its evaluator.
 *
 * ARGV: mode ('c' check, 'p' peek, 'r' reset), cost, now (ms, or -1 to use the server's TIME),
 *       rule count, then per rule: algorithm code, limit, windowMs, capacity.
 * KEYS: each rule's keys, in rule order (all share one hash tag, so one cluster slot).
 * Reply: per rule, allowed (0/1), remaining, resetMs, retryAfterMs (-1: never), resetAfterMs.
 */
import { createHash } from 'node:crypto';
import { ALGORITHM_NAMES, ALGORITHMS } from './index.js';

const evaluators = ALGORITHM_NAMES.map((name) => ALGORITHMS[name].lua.trim()).join('\n\n');
const keyCounts = ALGORITHM_NAMES.map((name) => {
  const algorithm = ALGORITHMS[name];
  return `[${algorithm.code}] = ${algorithm.keySuffixes.length}`;
}).join(', ');

export const CHECK_SCRIPT = `-- floodgate: check every rule of one key, all or nothing
local mode = ARGV[1]
if mode == 'r' then return redis.call('DEL', unpack(KEYS)) end

local NEVER = -1
local EVALUATORS = {}
local KEY_COUNTS = { ${keyCounts} }
-- Integers as exact decimal strings (tostring would switch to exponent notation past 14 digits).
local function fmt(x) return string.format('%d', x) end

local cost = tonumber(ARGV[2])
-- The server's clock, so gateway pods whose own clocks disagree still decide identically.
local now = tonumber(ARGV[3])
if now < 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

${evaluators}

-- Evaluate every rule first; consume only if all of them allow the request.
local reply, commits, allAllowed = {}, {}, true
local k, a = 1, 5
for i = 1, tonumber(ARGV[4]) do
  local code = tonumber(ARGV[a])
  local allowed, remaining, reset, retry, resetAfter, commit =
    EVALUATORS[code](k, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), cost)
  local n = #reply
  reply[n + 1] = allowed and 1 or 0
  reply[n + 2] = remaining
  reply[n + 3] = reset
  reply[n + 4] = retry
  reply[n + 5] = resetAfter
  commits[i] = commit
  allAllowed = allAllowed and allowed
  k = k + KEY_COUNTS[code]
  a = a + 4
end
if allAllowed and mode == 'c' then
  for i = 1, #commits do commits[i]() end
end
return reply
`;

export const CHECK_SCRIPT_SHA = createHash('sha1').update(CHECK_SCRIPT).digest('hex');
