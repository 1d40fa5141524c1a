/**
 * The fleet's heavy-hitter sketches in one Lua script of their own (see stores/types.ts
 * FleetSketches), sent through the same FCALL / EVALSHA / NOSCRIPT machinery as the limiter's
 * (calls.ts).
 *
 * Per measure (checked, denied), two sketches: the current period's and the one before it, in
 * two pairs of sorted sets (key -> count, key -> error) that swap roles when a period ends (after
 * two idle periods both are emptied), and a hash: `r` the end of the current period, `c` the
 * current pair (0 or 1), and per pair `f` its floor and `o` its offset. Counts and errors are
 * stored less the offset: a merge adds its floor to every key it does not name by raising the
 * offset, so it touches only the keys it names. A merge that leaves more than `capacity` keys
 * drops the smallest and raises the floor to the largest count dropped, so
 * `count - error <= true <= count` holds for every key, listed or not (Space-Saving's merge).
 * Only commands of the documented least-privilege ACL are used (docs/cluster.md).
 *
 * KEYS (one hash tag per prefix), per measure: the hash, pair 0's counts and errors, pair 1's.
 * ARGV: mode, now (ms, -1 for the server's TIME), period (ms), then per mode:
 *   'm' merge (10 KEYS: checked, then denied): capacity, then per measure: floor, n, and n times
 *       key, count, error.
 *   'r' read (the 5 KEYS of one measure): the current then the previous sketch, each as
 *       { floor, key, count, error, ... }, most first.
 */
import { standaloneScript } from './script.js';

const BODY = `-- floodgate: the fleet's heavy-hitter sketches of one prefix
local now, period, args

local function int(x) return string.format('%d', x) end

-- A hash as a table of numbers.
local function hash(key)
  local flat, t = redis.call('HGETALL', key), {}
  for i = 1, #flat, 2 do t[flat[i]] = tonumber(flat[i + 1]) end
  return t
end

-- One measure's state as of now (k: its five KEYS): the current sketch's pair becomes the
-- previous one when its period ended, the older pair is emptied to become the current one.
local function rotate(k)
  local m = hash(k[1])
  local rotateAt, cur = m.r or 0, m.c or 0
  if rotateAt > now then return m, cur end
  if rotateAt > 0 and now < rotateAt + period then
    cur = 1 - cur
    redis.call('DEL', k[2 + 2 * cur], k[3 + 2 * cur])
    m['f' .. cur], m['o' .. cur] = 0, 0
  else
    redis.call('DEL', k[2], k[3], k[4], k[5])
    m.f0, m.o0, m.f1, m.o1 = 0, 0, 0, 0
  end
  m.r, m.c = now + period, cur
  return m, cur
end

-- Adds one process's sketch (floor, n, then n entries from args[a]) to the current one; answers the next argument.
local function merge(k, capacity, a)
  local m, cur = rotate(k)
  local counts, errors = k[2 + 2 * cur], k[3 + 2 * cur]
  local addFloor, n = tonumber(args[a]), tonumber(args[a + 1])
  local floor, offset = m['f' .. cur] or 0, (m['o' .. cur] or 0) + addFloor
  for i = a + 2, a + 1 + 3 * n, 3 do
    local key, count, err = args[i], tonumber(args[i + 1]), tonumber(args[i + 2])
    if redis.call('ZSCORE', counts, key) then
      -- Held: it grows by this count, not by the floor the offset added.
      redis.call('ZADD', counts, 'INCR', int(count - addFloor), key)
      redis.call('ZADD', errors, 'INCR', int(err - addFloor), key)
    else
      -- New: the fleet counted it at most its floor times before.
      redis.call('ZADD', counts, int(floor + count - offset), key)
      redis.call('ZADD', errors, int(floor + err - offset), key)
    end
  end
  floor = floor + addFloor
  local over = redis.call('ZCOUNT', counts, '-inf', '+inf') - capacity
  if over > 0 then
    local dropped = redis.call('ZRANGE', counts, 0, over - 1, 'WITHSCORES')
    floor = math.max(floor, tonumber(dropped[#dropped]) + offset)
    for i = 1, #dropped, 2 do
      redis.call('ZREM', counts, dropped[i])
      redis.call('ZREM', errors, dropped[i])
    end
  end
  m['f' .. cur], m['o' .. cur] = floor, offset
  redis.call('HSET', k[1], 'r', int(m.r), 'c', cur, 'f0', int(m.f0 or 0), 'o0', int(m.o0 or 0), 'f1', int(m.f1 or 0), 'o1', int(m.o1 or 0))
  for i = 1, 5 do redis.call('PEXPIRE', k[i], int(2 * period)) end
  return a + 2 + 3 * n
end

-- One sketch of a pair as { floor, key, count, error, ... }, most first.
local function dump(k, m, slot)
  local counts, errors, offset = k[2 + 2 * slot], k[3 + 2 * slot], m['o' .. slot] or 0
  local out = { m['f' .. slot] or 0 }
  local entries = redis.call('ZRANGE', counts, 0, -1, 'WITHSCORES')
  for i = #entries - 1, 1, -2 do
    local key = entries[i]
    out[#out + 1] = key
    out[#out + 1] = tonumber(entries[i + 1]) + offset
    out[#out + 1] = tonumber(redis.call('ZSCORE', errors, key)) + offset
  end
  return out
end

local function run(KEYS, ARGV)
  args = ARGV
  local mode = ARGV[1]
  now, period = tonumber(ARGV[2]), tonumber(ARGV[3])
  if now < 0 then
    local time = redis.call('TIME')
    now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  if mode == 'm' then
    local capacity = tonumber(ARGV[4])
    local a = merge({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5] }, capacity, 5)
    merge({ KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10] }, capacity, a)
    return 1
  elseif mode == 'r' then
    -- Read only: the rotation a merge would make now is made in the answer instead.
    local m = hash(KEYS[1])
    local rotateAt, cur = m.r or 0, m.c or 0
    if rotateAt == 0 or now >= rotateAt + period then return { { 0 }, { 0 } } end
    if now >= rotateAt then return { { 0 }, dump(KEYS, m, cur) } end
    return { dump(KEYS, m, cur), dump(KEYS, m, 1 - cur) }
  end
  return redis.error_reply('floodgate sketches: unknown mode ' .. tostring(mode))
end
`;

/** The sketch script as EVAL runs it and as a function library (named after its content). */
export const SKETCH_SCRIPT = standaloneScript('sketch', BODY);
