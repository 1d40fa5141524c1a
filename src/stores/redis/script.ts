/**
 * Assembles the one Lua script behind every Redis operation. The preamble, the all-or-nothing
 * driver, settling and the override plumbing live here once; each algorithm contributes only its
 * evaluator and settler.
 *
 * ARGV[1] is the mode.
 *   'b' a batch of checks and peeks, on one clock (one TIME call), all in one atomic call. On a
 *       cluster every key of a batch shares one slot. KEYS, per check: the key's override key,
 *       then each rule's keys in rule order, then the block key of each rule with a block.
 *       ARGV: 'b', check count, now (ms, or -1 for the server's TIME), rule-set count, the rule
 *       sets (per rule
 *       "code,limit,windowMs,capacity,shadow,blockMs,factor,maxMs,forgetMs,requests": shadow 1
 *       for a rule that never denies, the block fields 0 for a rule without blocks, requests 1
 *       for a rule that takes 1 per check whatever its cost; windowMs, for a calendar rule, the
 *       starts of its periods around the caller's clock "p0/p1/p2/p3"; joined by ';'), then per check one
 *       argument "mode:cost:set:seen" (mode 'c' check or 'p' peek, set the rule set's number,
 *       seen the override the caller knows: '' for none, '*' to skip the comparison), whatever
 *       its rules.
 *       Reply: one flat array for the whole batch (Redis inspects every table it converts, so a
 *       nested array per check would cost it per check), per check in order:
 *       -1 then the key's current override ('' for none) when it is not `seen` (nothing was
 *       evaluated); otherwise a count, then that many integers: per rule allowed (1; 0 denied,
 *       2 denied while the rule's block holds the key; 1 + 4 × m allowed, crossing the thresholds
 *       of bit mask m if committed), remaining, resetMs, retryAfterMs (-1:
 *       never), resetAfterMs, token; then, when `seen` is an override, its remaining ms (-1: no
 *       expiry).
 *   A lone check or peek: as a batch of one, in one argument instead of six (each argument costs
 *       Redis and the client work per call). ARGV: "ruleSet|mode:cost:1:seen" (its rule set and
 *       check as in 'b', joined by '|', which a rule set never holds; never one letter, so never
 *       a mode), then now only when it is not the server's TIME. Reply as for 'b'.
 * Modes on one user key (every key shares its hash tag, so one slot):
 *   's' settle: KEYS as for a check. ARGV: mode, reserved cost, now, actual cost, rule count,
 *       then per rule: code, limit, windowMs (as in 'b'), capacity, the token its check returned, requests (1: the
 *       rule took 1, so a settle leaves it alone and its slots are 1; 2: as 1, and the request is
 *       refunded, so the rule gives its 1 back).
 *   'f' release and 'n' renew a request's concurrency slots: as 's' (the actual cost unused);
 *       replies the number of live slots released or renewed.
 *   'q' take a quota slice (see core/leases.ts): KEYS as for a check (its rules have no blocks).
 *       ARGV: mode, units wanted, now, cost, the override the caller knows ('' for none), unused
 *       units of the caller's last slice given back first (as a settle of them), then per rule
 *       "code,limit,windowMs,capacity,token" (the token of the slice given back). Takes g units
 *       from every rule at once, cost <= g <= wanted, at most a quarter of what the tightest rule
 *       admits now (never less than cost), or none when some rule denies cost. Reply as a
 *       check's when the override is not the one known; otherwise g (0: denied, nothing taken)
 *       then per rule the six integers of a check of g units (of cost when denied).
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
import { BLOCK_LUA } from '../../algorithms/block.js';
import { ALL_ALGORITHMS } from '../../algorithms/index.js';

/**
 * The script for a set of algorithms: the shared driver plus only those algorithms' evaluators
 * and settlers. Redis runs a script's whole body on every call, so a limiter that uses one
 * algorithm should not pay for defining the other four.
 */
function buildScript(codes: readonly number[]): string {
  const chosen = ALL_ALGORITHMS.filter((algorithm) => codes.includes(algorithm.code));
  const algorithms = chosen.map((algorithm) => algorithm.lua.trim()).join('\n\n');
  const keyCounts = chosen
    .map((algorithm) => `[${algorithm.code}] = ${algorithm.keySuffixes.length}`)
    .join(', ');
  // Replacer functions: the Lua contains `$'`, which a replacement string would expand.
  return TEMPLATE.replace('__KEY_COUNTS__', () => keyCounts)
    .replace('__ALGORITHMS__', () => algorithms)
    .replace('__BLOCK__', () => BLOCK_LUA.trim());
}

const TEMPLATE = `-- floodgate: every operation on one key, rules all or nothing
-- This call's redis.call, KEYS, ARGV and clock: set by run() on each call, read by the helpers
-- below as upvalues.
local call, KEYS, ARGV, now
-- The library functions called per check, as locals: a global lookup per call measurably
-- costs. Bound by run() on its first call: a function library's body runs once, at FUNCTION
-- LOAD, where no global but the library API exists (an EVAL runs it on every call).
local function libraryFunctions()
  return math.floor, math.ceil, math.max, math.min, string.match, string.gmatch, string.format, tonumber, unpack
end
local floor, ceil, max, min, match, gmatch, format, tonumber, unpack
-- Integers as exact decimal strings (tostring would switch to exponent notation past 14 digits),
-- remembered from call to call like PARSED below (an EVAL starts with an empty table): window
-- starts and small counts repeat across checks and calls, and a batch's checks share their ttls,
-- while a string.format costs a lone check more than its script's own arithmetic. Emptied when
-- full, so ttls that change every millisecond cannot grow the server's Lua memory without bound.
local FORMATTED, FORMATTED_COUNT, FORMATTED_MAX = {}, 0, 512
local function fmt(x)
  local text = FORMATTED[x]
  if text == nil then
    text = format('%d', x)
    -- NaN cannot be a table key; no state yields one, but it must not fail the whole batch.
    if x == x then
      if FORMATTED_COUNT >= FORMATTED_MAX then FORMATTED, FORMATTED_COUNT = {}, 0 end
      FORMATTED[x], FORMATTED_COUNT = text, FORMATTED_COUNT + 1
    end
  end
  return text
end

-- fmt for numbers that change every millisecond (the clock, times and ttls derived from it):
-- only the last one is remembered, which the checks of a batch share, rather than filling
-- FORMATTED with an entry per call, which measurably cost a lone check more than it saved.
local FRESH, FRESH_TEXT
local function fmtFresh(x)
  if FRESH ~= x then FRESH, FRESH_TEXT = x, format('%d', x) end
  return FRESH_TEXT
end

-- String values of this call's keys: checks and settles read them all with MGET up front (one
-- redis.call per SLICE keys instead of one GET per key: most of a check's cost in Redis
-- is its redis.call count). Writes go through put/del, which remember them, so a key that is
-- checked twice in one batch reads its own write. Non-string keys (sliding-log's sorted set)
-- read as false here and are used through their own commands.
-- A key's first write in a call is sent at once; later writes of it are only recorded (value in
-- WRITTEN, ttl in TTL, the key in DIRTY) and writeAll() sends the last one at the end of the
-- call: a key checked many times in one batch (one client's burst, a tenant's quota) costs two
-- writes instead of one per check, and a batch of distinct keys pays one table lookup per write.
-- Nothing outside this call can see the difference.
-- A lone check of one rule reads and writes each key once, so it swaps in get and put that skip
-- this bookkeeping (see checkDirect).
local VALUES, WRITTEN, TTL, DIRTY, DIRTY_COUNT
local function getLogged(k)
  local written = WRITTEN[KEYS[k]]
  if written ~= nil then return written end
  return VALUES[k]
end
local function putLogged(k, value, ttl)
  local key = KEYS[k]
  if WRITTEN[key] == nil then
    -- PSETEX, not SET with PX: cheaper to parse. The ttl as an integer string: a number
    -- argument would be formatted with %.14g, which measurably costs more.
    call('PSETEX', key, fmt(ttl), value)
  else
    if TTL[key] == nil then
      DIRTY_COUNT = DIRTY_COUNT + 1
      DIRTY[DIRTY_COUNT] = key
    end
    TTL[key] = ttl
  end
  WRITTEN[key] = value
end
local function getDirect(k)
  return VALUES[k]
end
local function putDirect(k, value, ttl)
  call('PSETEX', KEYS[k], fmtFresh(ttl), value)
end
local get, put = getLogged, putLogged
local function del(k)
  local key = KEYS[k]
  call('DEL', key)
  WRITTEN[key], TTL[key] = false, nil
end
-- Lua's unpack, and so one redis.call's arguments, stop at about 8,000 values: a call's keys are
-- read and deleted in slices of this many, whatever the size of its batch or rule set.
local SLICE = 1000
local function readAll()
  local count = #KEYS
  if count <= SLICE then return call('MGET', unpack(KEYS)) end
  local values = {}
  for from = 1, count, SLICE do
    local part = call('MGET', unpack(KEYS, from, min(from + SLICE - 1, count)))
    for i = 1, #part do values[from + i - 1] = part[i] end
  end
  return values
end
local function deleteFrom(first)
  local count, deleted = #KEYS, 0
  for from = first, count, SLICE do
    deleted = deleted + call('DEL', unpack(KEYS, from, min(from + SLICE - 1, count)))
  end
  return deleted
end
local function writeAll()
  for i = 1, DIRTY_COUNT do
    local key = DIRTY[i]
    local ttl = TTL[key]
    -- nil: deleted since (del), or already written (a key put again after a del is listed twice).
    if ttl ~= nil then
      call('PSETEX', key, fmt(ttl), WRITTEN[key])
      TTL[key] = nil
    end
  end
end

-- An override as stored: "expiresAt:value"; returns the value and its remaining ms (-1: none),
-- or nothing once expired.
local function liveOverride(stored)
  local e, value = match(stored, '^(%d+):(.*)$')
  e = tonumber(e)
  if e == nil then return stored, -1 end
  if e == 0 then return value, -1 end
  if e > now then return value, e - now end
end

-- Rule sets ("code,limit,windowMs,capacity,shadow,blockMs,factor,maxMs,forgetMs,requests;...") and check
-- arguments ("mode:cost:set:seen") as parsed, by their text: a limiter sends the same few
-- strings on every call. A function library keeps this table from call to call, so each string
-- is parsed (a gmatch or match, and a strtod per number) once rather than once per call; an EVAL
-- starts with an empty one. Both kinds share it: a rule set's text has no ':' and a check's
-- always has. Emptied when full, so strings that come and go (costs, override values) cannot grow the server's Lua memory without bound.
local PARSED, PARSED_COUNT, PARSED_MAX = {}, 0, 512
local function remember(text, parsed)
  if PARSED_COUNT >= PARSED_MAX then PARSED, PARSED_COUNT = {}, 0 end
  PARSED[text], PARSED_COUNT = parsed, PARSED_COUNT + 1
end

-- The batch reply, kept from call to call (an EVAL starts with a new one): a table grown entry
-- by entry is reallocated at every power of two, which costs a lone check more than filling it.
-- Entries past a call's reply are cleared; a call that failed midway (OUT_CLEAN false) may have
-- left some anywhere, and so may a reply larger than OUT_MAX, which is not kept: the next call
-- starts a new table.
local OUT, OUT_COUNT, OUT_CLEAN, OUT_MAX = {}, 0, true, 4096

local NEVER = -1
-- Set by an evaluator whose rule's commit would cross thresholds (a bit mask, see
-- algorithms/calendar-window.ts); the driver replies it as allowed = 1 + 4 * mask and clears it.
local CROSSED
local EVALUATORS, SETTLERS, RELEASERS, RENEWERS = {}, {}, {}, {}
local COMMIT_FN, COMMIT_K, COMMIT_X, COMMIT_Y, COMMIT_Z, COMMIT_W, COMMIT_UNITS = {}, {}, {}, {}, {}, {}, {}
local KEY_COUNTS = { __KEY_COUNTS__ }
-- Usage after a settle: a refund stops at zero, a charge at most (never lowering usage above it).
local function adjust(used, delta, most)
  if delta < 0 then return max(0, used + delta) end
  return max(used, min(used + delta, most))
end

__ALGORITHMS__

__BLOCK__

-- A rule's window as sent: milliseconds, or a calendar rule's period starts "p0/p1/p2/p3" (see
-- algorithms/calendar-window.ts) as a table.
local function windowOf(text)
  local ms = tonumber(text)
  if ms then return ms end
  local starts = {}
  for start in gmatch(text, '%d+') do starts[#starts + 1] = tonumber(start) end
  return starts
end

-- A rule set's text, parsed: { rule, ..., keys = its rules' key count, blocks = its block count }.
local function ruleSetOf(text)
  local set = PARSED[text]
  if not set then
    set = { keys = 0, blocks = 0 }
    for code, limit, window, capacity, shadow, block, factor, most, forget, requests in
      gmatch(text, '(%d+),(%d+),([%d/]+),(%d+),(%d),(%d+),([%d.]+),(%d+),(%d+),(%d)') do
      code, block = tonumber(code), tonumber(block)
      set[#set + 1] = { code, tonumber(limit), windowOf(window), tonumber(capacity), shadow == '1',
        block, tonumber(factor), tonumber(most), tonumber(forget), requests == '1' }
      set.keys = set.keys + KEY_COUNTS[code]
      if block > 0 then set.blocks = set.blocks + 1 end
    end
    remember(text, set)
  end
  return set
end

-- A check's "mode:cost:set:seen", parsed: { mode, cost, set, seen }.
local function checkOf(text)
  local check = PARSED[text]
  if not check then
    local mode, cost, set, seen = match(text, '^(%a):(%d+):(%d+):(.*)$')
    check = { mode, tonumber(cost), tonumber(set), seen }
    remember(text, check)
  end
  return check
end

-- One check or peek of one user key, its reply appended to 'out' after position n (see the
-- header). Its keys start at KEYS[k] (the override key); 'rules' is its rule set, each rule
-- { code, limit, windowMs, capacity, shadow, blockMs, factor, maxMs, forgetMs, requests }, and the set's
-- 'keys' counts its rules' keys, 'blocks' its block keys (which follow them). Returns the last
-- position written and where the next check's keys start.
local function checkOne(out, n, k, rules, mode, cost, seen)
  -- First: is the key's override still the one the caller decided with?
  local overrideRemaining = nil
  if seen ~= '*' then
    local current, remaining = '', -1
    local stored = get(k)
    if stored then
      local value, left = liveOverride(stored)
      if value then current, remaining = value, left end
    end
    if current ~= seen then
      k = k + rules.keys + rules.blocks
      out[n + 1] = -1
      out[n + 2] = current
      return n + 2, k + 1
    end
    if seen ~= '' then overrideRemaining = remaining end
  end
  k = k + 1
  local kb = k + rules.keys
  local count = #rules
  out[n + 1] = count * 6 + (overrideRemaining and 1 or 0)
  n = n + 1
  -- Evaluate every rule first; consume only if all enforced rules allow the request, and then
  -- from each rule that allows it (a shadow rule never stops the others). An evaluator
  -- returns its commit as a function and up to four arguments, kept in the call's reusable
  -- COMMIT_* tables: a closure per rule per check measurably cost more. One rule (the usual
  -- case) is its own verdict: it commits at once, without the tables.
  local allAllowed = true
  for i = 1, count do
    local rule = rules[i]
    local code = rule[1]
    -- A rule counting requests takes 1 whatever the check's cost.
    local units = rule[10] and 1 or cost
    local allowed, remaining, reset, retry, resetAfter, token, commit, x, y, z, w =
      EVALUATORS[code](k, rule[2], rule[3], rule[4], units)
    local held
    if rule[6] > 0 then
      allowed, remaining, reset, retry, held = applyBlock(kb, rule, mode, allowed, remaining, reset, retry)
      kb = kb + 1
    end
    -- 2: denied because the rule's block holds the key, which a peek reports too.
    out[n + 1] = allowed and 1 or held and 2 or 0
    if CROSSED then
      if allowed then out[n + 1] = 1 + 4 * CROSSED end
      CROSSED = nil
    end
    out[n + 2] = remaining
    out[n + 3] = reset
    out[n + 4] = retry
    out[n + 5] = resetAfter
    out[n + 6] = token
    n = n + 6
    if count == 1 then
      if allowed and mode == 'c' then commit(k, units, x, y, z, w) end
    else
      COMMIT_FN[i], COMMIT_K[i], COMMIT_X[i], COMMIT_Y[i], COMMIT_Z[i], COMMIT_W[i] = allowed and commit, k, x, y, z, w
      COMMIT_UNITS[i] = units
      allAllowed = allAllowed and (allowed or rule[5])
    end
    k = k + KEY_COUNTS[code]
  end
  if count > 1 and allAllowed and mode == 'c' then
    for i = 1, count do
      if COMMIT_FN[i] then COMMIT_FN[i](COMMIT_K[i], COMMIT_UNITS[i], COMMIT_X[i], COMMIT_Y[i], COMMIT_Z[i], COMMIT_W[i]) end
    end
  end
  if overrideRemaining then
    n = n + 1
    out[n] = overrideRemaining
  end
  return n, kb
end

-- A lone check's "ruleSet|check", parsed: { rules, check, direct }, direct when checkDirect can
-- decide it: one rule with one key (the O(1) algorithms, whose one string key get and put hold),
-- no block, and no override named.
local function loneOf(text)
  local set, check = match(text, '^([^|]*)|(.*)$')
  local rules, parsed = ruleSetOf(set), checkOf(check)
  local seen = parsed[4]
  local direct = #rules == 1 and rules.keys == 1 and rules.blocks == 0 and (seen == '' or seen == '*')
  local lone = { rules, parsed, direct }
  remember(text, lone)
  return lone
end

-- A lone check of one rule without a block that names no override, the usual shape: checkOne's
-- answer without the batch's write log and reply table, which cost such a check more than its
-- evaluation.
local DIRECT_OUT = { 6, 0, 0, 0, 0, 0, 0 }
local function checkDirect(rule, mode, cost, seen)
  VALUES, get, put = call('MGET', KEYS[1], KEYS[2]), getDirect, putDirect
  if seen == '' then
    local stored = VALUES[1]
    if stored then
      local current = liveOverride(stored)
      if current and current ~= '' then return { -1, current } end
    end
  end
  -- A rule counting requests takes 1 whatever the check's cost.
  local units = rule[10] and 1 or cost
  local allowed, remaining, reset, retry, resetAfter, token, commit, x, y, z, w =
    EVALUATORS[rule[1]](2, rule[2], rule[3], rule[4], units)
  if allowed and mode == 'c' then commit(2, units, x, y, z, w) end
  local out = DIRECT_OUT
  out[2], out[3], out[4], out[5], out[6], out[7] = allowed and 1 or 0, remaining, reset, retry, resetAfter, token
  if CROSSED then
    if allowed then out[2] = 1 + 4 * CROSSED end
    CROSSED = nil
  end
  return out
end

-- A quota slice ('q', see the header of script.ts): give back, then take, every rule at once.
local function takeSlice()
  local want, cost, seen, returned = tonumber(ARGV[2]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
  local current = ''
  local stored = get(1)
  if stored then
    local value = liveOverride(stored)
    if value then current = value end
  end
  if current ~= seen then return { 'override', current } end
  local rules = {}
  for a = 7, #ARGV do
    local code, L, W, B, token = match(ARGV[a], '^(%d+),(%d+),(%d+),(%d+),(-?%d+)$')
    rules[a - 6] = { tonumber(code), tonumber(L), tonumber(W), tonumber(B), tonumber(token) }
  end
  local k = 2
  for i = 1, #rules do
    local r = rules[i]
    if returned > 0 then SETTLERS[r[1]](k, r[2], r[3], r[4], r[5], returned, -returned) end
    r[6] = k
    k = k + KEY_COUNTS[r[1]]
  end
  -- Near the limit a slice shrinks to a quarter of what is left, so other processes still get some.
  local grant = want
  for i = 1, #rules do
    local r = rules[i]
    local allowed, remaining = EVALUATORS[r[1]](r[6], r[2], r[3], r[4], cost)
    if not allowed then
      grant = 0
      break
    end
    grant = min(grant, max(cost, floor(remaining / 4)))
  end
  local units = grant > 0 and grant or cost
  local out, n = { grant }, 1
  for i = 1, #rules do
    local r = rules[i]
    local allowed, remaining, reset, retry, resetAfter, token, commit, x, y, z, w =
      EVALUATORS[r[1]](r[6], r[2], r[3], r[4], units)
    out[n + 1], out[n + 2], out[n + 3] = allowed and 1 or 0, remaining, reset
    out[n + 4], out[n + 5], out[n + 6] = retry, resetAfter, token
    n = n + 6
    -- Each rule has keys of its own: committing one cannot change what the next evaluates.
    if grant > 0 then commit(r[6], units, x, y, z, w) end
  end
  writeAll()
  return out
end

-- The call's clock from ARGV[3]: the server's when it is -1, so gateway pods whose own clocks
-- disagree still decide identically. '-1' compared as a string first: it is the usual value,
-- and tonumber costs a strtod.
-- given: the caller's clock, or nil or '-1' for the server's.
local function setClock(given)
  now = given and given ~= '-1' and tonumber(given) or -1
  if now < 0 then
    local t = call('TIME')
    now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
  end
end

-- One call: KEYS and ARGV as described in the header of script.ts.
local function run(keys, args)
  if not unpack then
    floor, ceil, max, min, match, gmatch, format, tonumber, unpack = libraryFunctions()
  end
  call, KEYS, ARGV = redis.call, keys, args
  local mode = ARGV[1]
  -- A lone check first: the most frequent call. Its "ruleSet|check" (longer than any mode's one
  -- letter) is parsed once (see PARSED).
  local lone
  if #mode > 1 then
    lone = PARSED[mode] or loneOf(mode)
    setClock(ARGV[2])
    if lone[3] then
      local check = lone[2]
      return checkDirect(lone[1][1], check[1], check[2], check[4])
    end
  else
    if mode == 'r' then return deleteFrom(2) end
    if mode == 'x' then return call('DEL', KEYS[1]) end
    if mode == 'g' then return call('HSET', KEYS[1], ARGV[2], ARGV[4]) end
    if mode == 'd' then return call('HDEL', KEYS[1], ARGV[2]) end
    setClock(ARGV[3])
  end

  if mode == 'o' then
    local ttl = tonumber(ARGV[2])
    if ttl > 0 then
      call('SET', KEYS[1], fmt(now + ttl) .. ':' .. ARGV[4], 'PX', ttl)
      return now + ttl
    end
    call('SET', KEYS[1], '0:' .. ARGV[4])
    return 0
  end
  if mode == 'l' then
    local entries, reply = call('HGETALL', KEYS[1]), {}
    for i = 1, #entries, 2 do
      local value, remaining = liveOverride(entries[i + 1])
      if value then
        reply[#reply + 1] = entries[i]
        reply[#reply + 1] = remaining
        reply[#reply + 1] = value
      else
        call('HDEL', KEYS[1], entries[i])
      end
    end
    return reply
  end

  VALUES, WRITTEN, TTL, DIRTY, DIRTY_COUNT, get, put = readAll(), {}, {}, {}, 0, getLogged, putLogged
  if mode == 'q' then return takeSlice() end

  if mode == 's' or mode == 'f' or mode == 'n' then
    local reserved = tonumber(ARGV[2])
    local delta = tonumber(ARGV[4]) - reserved
    -- 'f' and 'n' release and renew a request's slots, counting the live slots they touched.
    local slots = mode == 'f' and RELEASERS or mode == 'n' and RENEWERS
    local k, a, touched = 2, 6, 0
    for i = 1, tonumber(ARGV[5]) do
      local code = tonumber(ARGV[a])
      local L, W, B, token = tonumber(ARGV[a + 1]), windowOf(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
      -- A rule counting requests took 1 whatever the cost: a settle leaves it alone, a refund
      -- ('2') gives the 1 back.
      local flag = ARGV[a + 5]
      local requests = flag ~= '0'
      if slots then
        touched = touched + slots[code](k, L, W, B, token, requests and 1 or reserved)
      elseif not requests then
        SETTLERS[code](k, L, W, B, token, reserved, delta)
      elseif flag == '2' then
        SETTLERS[code](k, L, W, B, token, 1, -1)
      end
      k = k + KEY_COUNTS[code]
      a = a + 6
    end
    writeAll()
    if slots then return touched end
    return 1
  end

  local out, last, n = OUT, OUT_COUNT, 0
  if not OUT_CLEAN then out, last = {}, 0 end
  OUT_CLEAN = false
  if lone then
    local check = lone[2]
    n = checkOne(out, 0, 1, lone[1], check[1], check[2], check[4])
  else
    -- 'b': a batch of checks and peeks, on one clock. Rule sets come first, once each; a check
    -- names its set by number. Most checks share one "mode:cost:set:seen" string: see PARSED.
    local ruleSets, a, k = {}, 5, 1
    for s = 1, tonumber(ARGV[4]) do
      ruleSets[s] = ruleSetOf(ARGV[a])
      a = a + 1
    end
    for c = 1, tonumber(ARGV[2]) do
      -- Looked up here first: a function call per check costs a batch of 32 about 1%.
      local text = ARGV[a]
      local check = PARSED[text] or checkOf(text)
      n, k = checkOne(out, n, k, ruleSets[check[3]], check[1], check[2], check[4])
      a = a + 1
    end
  end
  writeAll()
  for i = n + 1, last do out[i] = nil end
  OUT, OUT_COUNT, OUT_CLEAN = out, n, n <= OUT_MAX
  return out
end
`;

export interface Script {
  /** The source as EVAL runs it. */
  readonly text: string;
  readonly sha: string;
  /**
   * The same code as a Redis Functions library (Redis 7+, Valkey), whose body runs once at
   * FUNCTION LOAD: a call then runs only the operation, not the definitions of every helper.
   */
  readonly library: string;
  /** The library's name, which is also its main function's name (unique per script text). */
  readonly functionName: string;
  /**
   * The same function flagged `no-writes`, for FCALL_RO: Redis still runs it when it refuses
   * writes (out of memory), so a batch of peeks can tell which keys are over their limit.
   */
  readonly readOnlyFunctionName: string;
}

/**
 * A Lua script of its own beside the limiter's (the queues', the sketches', the reservoirs'):
 * `body` defines `run(KEYS, ARGV)`; the library registers it once, under `floodgate_<kind>_<sha>`.
 */
export function standaloneScript(kind: string, body: string): Script {
  const text = `local CALL_KEYS, CALL_ARGV = KEYS, ARGV\n${body}\nreturn run(CALL_KEYS, CALL_ARGV)\n`;
  const sha = createHash('sha1').update(text).digest('hex');
  const functionName = `floodgate_${kind}_${sha.slice(0, 20)}`;
  const library = `#!lua name=${functionName}\n${body}\nredis.register_function('${functionName}', run)\n`;
  return { text, sha, library, functionName, readOnlyFunctionName: functionName };
}

const scripts = new Map<string, Script>();

/** The script (and its SHA) for the given algorithm codes; built once per combination. */
export function scriptFor(codes: readonly number[]): Script {
  const sorted = [...new Set(codes)].sort((a, b) => a - b);
  const id = sorted.join(',');
  let script = scripts.get(id);
  if (script === undefined) {
    const body = buildScript(sorted);
    // EVAL's KEYS and ARGV are globals, which the body shadows with its per-call upvalues.
    const text = `local CALL_KEYS, CALL_ARGV = KEYS, ARGV\n${body}\nreturn run(CALL_KEYS, CALL_ARGV)\n`;
    const sha = createHash('sha1').update(text).digest('hex');
    // Named after the content, so two versions of Floodgate sharing a server never replace
    // each other's library with a different one.
    const functionName = `floodgate_${sha.slice(0, 20)}`;
    const readOnlyFunctionName = `${functionName}_ro`;
    const library = `#!lua name=${functionName}\n${body}\nredis.register_function('${functionName}', run)\nredis.register_function{function_name='${readOnlyFunctionName}', callback=run, flags={'no-writes'}}\n`;
    script = { text, sha, library, functionName, readOnlyFunctionName };
    scripts.set(id, script);
  }
  return script;
}

/** The script with every algorithm (what SHA pins and whole-cluster preloads refer to). */
export const CHECK_SCRIPT = scriptFor(ALL_ALGORITHMS.map((algorithm) => algorithm.code)).text;
export const CHECK_SCRIPT_SHA = scriptFor(ALL_ALGORITHMS.map((algorithm) => algorithm.code)).sha;
/** The script without algorithms, for operations that evaluate no rule (reset, overrides). */
export const BASE_SCRIPT = scriptFor([]);
