/**
 * `compare --lease` without Redis: one memory store shared by the simulated processes, behind a
 * store of the lab's own that stands in for a shared remote store. The memory store itself never
 * leases (one process's own store gains nothing from slices), so this stand-in takes slices the
 * way the Redis script's 'q' mode does, through the memory store's evaluate and settle: give the
 * last slice's unused units back, then take up to the units wanted, at most a quarter of what the
 * tightest rule has left (never less than the cost), or nothing when a rule denies the cost. It
 * counts its calls: what would be round trips to a shared store.
 */
import { type EvaluateReply, memoryStore, type Store } from '../../index.js';
import type { ResolvedRule } from '../../internal.js';

export interface LabStore {
  /** The stand-in the processes' limiters share (not local: each call counts). */
  readonly store: Store;
  /** The memory store under it, for an observer whose peeks are not counted. */
  readonly memory: Store;
  /** Calls made to the stand-in so far. */
  calls(): number;
}

/** What a store's `lease` resolves to: the slice taken, or the news that the override changed. */
type LeaseReply = Awaited<ReturnType<NonNullable<Store['lease']>>>;

export function createLabStore(): LabStore {
  const memory = memoryStore();
  let calls = 0;
  const store: Store = {
    kind: 'memory (shared, leasing)',
    async evaluate(head, rules, cost, consume, overrideSeen) {
      calls++;
      return memory.evaluate(head, rules, cost, consume, overrideSeen);
    },
    async settle(head, rules, reserved, actual, tokens, refund) {
      calls++;
      await memory.settle(head, rules, reserved, actual, tokens, refund);
    },
    async lease(head, rules, cost, want, returned, tokens, overrideSeen) {
      calls++;
      // Give back, peek and take in one turn (the memory store answers within it), so no other
      // process's call runs between them: atomic, as the script's call is.
      const givenBack = returned > 0 ? memory.settle(head, rules, returned, 0, tokens) : undefined;
      const reply = takeSlice(memory, head, rules, cost, want, overrideSeen);
      await givenBack;
      return reply;
    },
    reset: (head, rules) => memory.reset(head, rules),
    setOverride: (prefix, key, value, ttlMs) => memory.setOverride(prefix, key, value, ttlMs),
    clearOverride: (prefix, key) => memory.clearOverride(prefix, key),
    listOverrides: (prefix) => memory.listOverrides(prefix),
  };
  return { store, memory, calls: () => calls };
}

/** Up to `want` units, at most a quarter of what the tightest rule has left, never less than `cost`. */
function takeSlice(
  memory: Store,
  head: string,
  rules: readonly ResolvedRule[],
  cost: number,
  want: number,
  overrideSeen: string,
): LeaseReply {
  const peek = inTurn(memory.evaluate(head, rules, cost, false, overrideSeen));
  if ('overrideChanged' in peek) return peek;
  let granted = want;
  for (const outcome of peek.outcomes) {
    if (!outcome.allowed) return { granted: 0, outcomes: peek.outcomes };
    granted = Math.min(granted, Math.max(cost, Math.floor(outcome.remaining / 4)));
  }
  const taken = inTurn(memory.evaluate(head, rules, granted, true, overrideSeen));
  return 'overrideChanged' in taken ? taken : { granted, outcomes: taken.outcomes };
}

/** The memory store's answer, which it gives within the turn. */
function inTurn(reply: EvaluateReply | Promise<EvaluateReply>): EvaluateReply {
  if (reply instanceof Promise) throw new Error('compare --lease: the memory store answered with a promise');
  return reply;
}
