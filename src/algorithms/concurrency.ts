/**
 * Concurrency: at most `limit` slots held at once per key. A check takes `cost` slots (1 by
 * default) when that many are free; each slot is held until the request's holder gives it back
 * (`release`) or its lease runs out, `lease` after it was taken or last renewed, on the store's
 * clock. A crashed holder's slots thus come back within one lease, never before.
 *
 * Every request's slots carry an id unique for the key over time, `max(now × 1000, last + 1)`:
 * strictly above every id handed out before, even within one millisecond, and the last id is
 * kept until the clock has passed it, so a late or repeated release can never free a slot that
 * another request took since. The id is the decision's token.
 *
 * Settling a cost (`settle`) leaves slots alone: slots are given back by release, not by cost.
 *
 * Redis: a sorted set of slot members scored by lease expiry (a request of cost c holds members
 * `id`, `id.2` … `id.c`), pruned by each admitted check, and a string holding the last id. O(limit)
 * memory per key; a check is O(log n).
 */
import { type Algorithm, type AlgorithmParams, Evaluation, NEVER, type SlotChange } from './types.js';

interface Lease {
  readonly id: number;
  readonly cost: number;
  expiresAt: number;
}

export interface ConcurrencyState {
  /** The last slot id handed out. */
  last: number;
  /** Held slots, possibly past their expiry until the next admitted check prunes them. */
  leases: Lease[];
}

/** Largest concurrency limit: each held slot is one stored member. */
export const CONCURRENCY_MAX_LIMIT = 10_000;

/** The lease when a rule gives none: long enough for most requests, short enough to recover crashes. */
export const DEFAULT_LEASE_MS = 60_000;

/** The Lua dispatch code: `EVALUATORS[6]`, `SETTLERS[6]`, `RELEASERS[6]`, `RENEWERS[6]`. */
const CODE = 6;

function liveLeases(state: ConcurrencyState | undefined, now: number): Lease[] {
  return state === undefined ? [] : state.leases.filter((lease) => lease.expiresAt > now);
}

/** The id the next request gets at `now`. */
function nextId(state: ConcurrencyState | undefined, now: number): number {
  return state === undefined ? now * 1000 : Math.max(now * 1000, state.last + 1);
}

/** How long a state must be kept: its latest live lease, and its last id until the clock passes it. */
function ttlOf(leases: readonly Lease[], last: number, now: number): number {
  let latest = now;
  for (const lease of leases) if (lease.expiresAt > latest) latest = lease.expiresAt;
  return Math.max(latest, Math.floor(last / 1000) + 1) - now;
}

/** The state after `change` is applied to the request holding `token`, and how many live slots it touched. */
function changeLease(
  state: ConcurrencyState | undefined,
  now: number,
  token: number,
  change: (leases: Lease[], index: number) => void,
): SlotChange<ConcurrencyState> {
  const leases = state?.leases ?? [];
  const index = leases.findIndex((lease) => lease.id === token);
  if (state === undefined || index < 0) return { slots: 0, result: undefined };
  const lease = leases[index] as Lease;
  const slots = lease.expiresAt > now ? lease.cost : 0;
  change(leases, index);
  const ttlMs = ttlOf(liveLeases(state, now), state.last, now);
  return { slots, result: ttlMs > 0 ? { state, ttlMs } : 'delete' };
}

export const concurrency: Algorithm<ConcurrencyState> = {
  name: 'concurrency',
  tag: 'cc',
  code: CODE,
  hasBurst: false,
  keySuffixes: ['', ':n'],
  keepsKeyTime: false,
  maxLimit: CONCURRENCY_MAX_LIMIT,
  evaluate(state, now, cost, { limit: L, windowMs: lease }: AlgorithmParams) {
    const live = liveLeases(state, now).sort((a, b) => a.expiresAt - b.expiresAt);
    let used = 0;
    for (const held of live) used += held.cost;
    const allowed = used + cost <= L;
    let retryAfterMs = 0;
    if (!allowed) {
      if (cost > L) {
        retryAfterMs = NEVER;
      } else {
        // The earliest time enough slots are certain to be free: when their leases run out.
        const excess = used + cost - L;
        let freed = 0;
        let i = 0;
        while (freed < excess) freed += (live[i++] as Lease).cost;
        retryAfterMs = (live[i - 1] as Lease).expiresAt - now;
      }
    }
    const latest = live.length === 0 ? now : (live[live.length - 1] as Lease).expiresAt;
    const id = nextId(state, now);
    const resetAfterMs = Math.max(latest - now, lease, Math.floor(id / 1000) + 1 - now);
    return new Evaluation(allowed, Math.max(0, L - used), latest - now, retryAfterMs, resetAfterMs, id);
  },
  commit(state, now, cost, { windowMs: lease }) {
    const id = nextId(state, now);
    const held: Lease = { id, cost, expiresAt: now + lease };
    if (state === undefined) return { last: id, leases: [held] };
    state.leases = liveLeases(state, now);
    state.leases.push(held);
    state.last = id;
    return state;
  },
  settle() {
    return undefined;
  },
  slots: {
    reset(state, now) {
      if (state === undefined) return 'delete';
      const ttlMs = ttlOf([], state.last, now);
      return ttlMs > 0 ? { state: { last: state.last, leases: [] }, ttlMs } : 'delete';
    },
    release(state, now, token) {
      return changeLease(state, now, token, (leases, index) => leases.splice(index, 1));
    },
    renew(state, now, token, { windowMs: lease }) {
      return changeLease(state, now, token, (leases, index) => {
        const held = leases[index] as Lease;
        if (held.expiresAt > now) held.expiresAt = now + lease;
      });
    },
  },
  lua: `
-- The member names of the request with id 'token' and 'cost' slots: id, id.2, ..., id.cost.
local function slotMember(token, i)
  if i == 1 then return fmt(token) end
  return fmt(token) .. '.' .. fmt(i)
end

-- Takes 'cost' slots for request 'id', dropping expired ones; the set and the last id (at
-- KEYS[k + 1]) live 'ttl' ms.
local function concurrencyCommit(k, cost, W, id, ttl)
  local set = KEYS[k]
  call('ZREMRANGEBYSCORE', set, '-inf', fmt(now))
  local expiry = fmt(now + W)
  for i = 1, cost do call('ZADD', set, expiry, slotMember(id, i)) end
  call('PEXPIRE', set, fmt(ttl))
  put(k + 1, fmt(id), ttl)
end

EVALUATORS[${CODE}] = function(k, L, W, B, cost)
  local set = KEYS[k]
  local after = '(' .. fmt(now)
  local used = call('ZCOUNT', set, after, '+inf')
  local allowed = used + cost <= L
  local retry = 0
  if not allowed then
    if cost > L then
      retry = NEVER
    else
      -- The earliest time enough slots are certain to be free: when their leases run out.
      local nth = call('ZRANGEBYSCORE', set, after, '+inf', 'WITHSCORES', 'LIMIT', used + cost - L - 1, 1)
      retry = tonumber(nth[2]) - now
    end
  end
  local reset = 0
  local latest = call('ZRANGE', set, -1, -1, 'WITHSCORES')
  if latest[2] and tonumber(latest[2]) > now then reset = tonumber(latest[2]) - now end
  local id = now * 1000
  local last = get(k + 1)
  if last then id = max(id, tonumber(last) + 1) end
  local resetAfter = max(reset, W, floor(id / 1000) + 1 - now)
  return allowed, max(0, L - used), reset, retry, resetAfter, id, concurrencyCommit, W, id, resetAfter
end

SETTLERS[${CODE}] = function() end

-- Gives back the request's slots; counts those whose lease had not run out.
RELEASERS[${CODE}] = function(k, L, W, B, token, cost)
  local set, freed = KEYS[k], 0
  for i = 1, cost do
    local member = slotMember(token, i)
    local score = call('ZSCORE', set, member)
    if score then
      call('ZREM', set, member)
      if tonumber(score) > now then freed = freed + 1 end
    end
  end
  return freed
end

-- Extends the request's live slots to a full lease from now; counts them.
RENEWERS[${CODE}] = function(k, L, W, B, token, cost)
  local set, renewed = KEYS[k], 0
  local expiry = fmt(now + W)
  for i = 1, cost do
    local member = slotMember(token, i)
    local score = call('ZSCORE', set, member)
    if score and tonumber(score) > now then
      call('ZADD', set, 'XX', expiry, member)
      renewed = renewed + 1
    end
  end
  if renewed > 0 and call('PTTL', set) < W then call('PEXPIRE', set, W) end
  return renewed
end`,
};
