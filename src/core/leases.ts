/**
 * Quota leasing (`quotaLease`, see docs/leasing.md): a process takes a slice of a hot key's quota
 * in one atomic store call and admits the key's next checks from it, without a round trip.
 *
 * Never above the limit: a slice's units are consumed from the shared state when it is taken, as
 * admissions the algorithm allowed at that moment, and a slice is used only while those units
 * still count as they did then: a fixed-window or sliding-window slice until the end of the
 * aligned window it was taken in (measured from when the take was sent, on this process's
 * monotonic clock, so the store's window ends no earlier); a token-bucket or gcra slice for at
 * most BUCKET_SLICE_MS. Unused units go back (a settle of them) when the key has been idle for
 * IDLE_MS, with the next take, and on close; a window slice past its window has nothing to give
 * back to fixed-window, and gives its units back to sliding-window's previous window.
 *
 * Only keys checked at least HOT_CHECKS times within TICK_MS take slices; the others keep one
 * store call per check. Keys (per rule set) are remembered in an LRU of LEASE_KEYS entries, one
 * slice each; an entry pushed out gives its slice back.
 */
import { Evaluation } from '../algorithms/types.js';
import { createLru } from '../base/lru.js';
import type { ResolvedRule } from '../base/types.js';
import type { Leased, OverrideChanged, RuleOutcome, Store } from '../stores/types.js';
import { unref } from '../turns.js';
import type { RuleSet } from './plans.js';

/** Checks of one key within TICK_MS that make it hot. */
export const HOT_CHECKS = 8;
const TICK_MS = 100;
/** A slice asks for about this long of the key's local rate (then capped by `quotaLease.max`). */
const HORIZON_MS = 100;
/** Unused units go back after this long without a check of the key. */
export const IDLE_MS = 100;
/** The longest a token-bucket or gcra slice is used (see docs/leasing.md for the bound it gives). */
export const BUCKET_SLICE_MS = 250;
/** After a failed take, the key's checks go to the store (behind its breaker) for this long. */
const COOL_MS = 1000;
/** Keys (per rule set) whose heat and slices one limiter remembers. */
export const LEASE_KEYS = 10_000;

/** Returned by `local` when a slice must be taken first (see `take`). */
export const TAKE: unique symbol = Symbol('floodgate.take');
/** Returned by `take` when it waited for another check's take: ask `local` again. */
export const RETRY: unique symbol = Symbol('floodgate.retry');

interface Slice {
  /** Units left to admit. */
  units: number;
  readonly tokens: readonly number[];
  /** Each rule's outcome at the take, and what the store had left after it. */
  readonly outcomes: readonly RuleOutcome[];
  readonly shared: readonly number[];
  readonly takenAt: number;
  readonly expiresAt: number;
  /** Whether units left after `expiresAt` still count in the store (sliding-window's previous window, the buckets). */
  readonly returnableLate: boolean;
}

interface Entry {
  readonly head: string;
  readonly set: RuleSet;
  tickStart: number;
  tickChecks: number;
  lastTickChecks: number;
  lastUse: number;
  coolUntil: number;
  /** When the window of its last slice ends (fixed-window, sliding-window), on the local clock; 0 before one. */
  windowEnd: number;
  slice: Slice | undefined;
  taking: Promise<unknown> | undefined;
}

export interface Leases {
  /**
   * A check of `cost` on a leased rule set: outcomes answered from this process's slice; TAKE
   * when a slice must be taken (`take`); undefined when the key is not hot (or a take failed
   * lately): one store call as usual.
   */
  local(head: string, set: RuleSet, cost: number): readonly RuleOutcome[] | typeof TAKE | undefined;
  /**
   * Takes a slice for the check (giving back the last one's unused units): its outcomes (a denial
   * when some rule denies `cost`); RETRY after waiting for another check's take; undefined when
   * the store failed or the key has an override (then the check goes the usual way).
   */
  take(head: string, set: RuleSet, cost: number): Promise<readonly RuleOutcome[] | typeof RETRY | undefined>;
  /** Gives back the key's slices (an override set here, whose rules apply from the next check). */
  giveBack(head: string): void;
  /** Forgets the key's slices without giving them back (a reset deleted their state). */
  forget(head: string): void;
  /** Gives every slice back (waiting for the store at most its deadline) and stops the idle timer. */
  close(): Promise<void>;
}

/** How long a slice taken with these outcomes may be used, from when its take was sent. */
function lifetimeOf(rules: readonly ResolvedRule[], outcomes: readonly RuleOutcome[]): number {
  let ms = Number.POSITIVE_INFINITY;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as ResolvedRule;
    const outcome = outcomes[i] as RuleOutcome;
    const name = rule.algorithm.name;
    // resetAfterMs is the time to the window's end (fixed) or to the next window's end (sliding).
    const rest =
      name === 'fixed-window'
        ? outcome.resetAfterMs
        : name === 'sliding-window'
          ? outcome.resetAfterMs - rule.windowMs
          : Math.min(BUCKET_SLICE_MS, rule.windowMs);
    ms = Math.min(ms, rest);
  }
  return ms;
}

/** What sizes a rule set's slices: its rules' smallest `quotaLease.max`, and its shortest aligned window. */
interface Sizing {
  readonly max: number;
  /** The shortest fixed-window or sliding-window window, or undefined when it has none. */
  readonly period: number | undefined;
}

function sizingOf(set: RuleSet): Sizing {
  const windows = set.rules
    .filter((rule) => rule.algorithm.name === 'fixed-window' || rule.algorithm.name === 'sliding-window')
    .map((rule) => rule.windowMs);
  return {
    max: Math.min(...set.rules.map((rule) => rule.quotaLease?.max ?? 1)),
    period: windows.length === 0 ? undefined : Math.min(...windows),
  };
}

/**
 * How long of the key's local rate a slice asks for: HORIZON_MS, and near the end of an aligned
 * window an eighth of what is left of it, so slices shrink to `cost` as the window ends and few
 * units die unused in a process that stops checking then.
 */
function horizonOf(entry: Entry, period: number | undefined, at: number): number {
  if (period === undefined || entry.windowEnd === 0) return HORIZON_MS;
  // Aligned windows follow one another every `period`: the current one ends at the next of those ends.
  const end =
    at < entry.windowEnd
      ? entry.windowEnd
      : entry.windowEnd + (Math.floor((at - entry.windowEnd) / period) + 1) * period;
  return Math.min(HORIZON_MS, (end - at) / 8);
}

/** A store call within the limiter's deadline: its value, or undefined once the deadline passed. */
export type Within = <T>(work: Promise<T>) => Promise<T | undefined>;

export function createLeases(
  store: Store,
  within: Within,
  failed: (cause: unknown) => void,
  sliced?: (action: 'taken' | 'returned') => void,
): Leases | undefined {
  if (store.lease === undefined || store.local === true) return undefined;
  const lease: NonNullable<Store['lease']> = store.lease.bind(store);
  // Lifetimes are durations from the store's replies: measured on a monotonic clock, never Date.now.
  const now = store.clock ?? (() => performance.now());
  const entries = createLru<Entry>(LEASE_KEYS);
  const holding = new Set<Entry>();
  const returning = new Set<Promise<void>>();
  const sizings = new WeakMap<RuleSet, Sizing>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const keyOf = (head: string, set: RuleSet) => (set.plan === undefined ? head : `${head}|${set.plan}`);

  function giveBackSlice(entry: Entry, at: number): void {
    const slice = entry.slice;
    entry.slice = undefined;
    holding.delete(entry);
    if (slice === undefined || slice.units === 0 || (at >= slice.expiresAt && !slice.returnableLate)) return;
    sliced?.('returned');
    const returned = store
      .settle(entry.head, entry.set.rules, slice.units, 0, slice.tokens)
      .catch(failed)
      .finally(() => returning.delete(returned));
    returning.add(returned);
  }

  /** Every IDLE_MS while some slice is held: gives back the slices of idle keys and dead windows. */
  function sweep(): void {
    timer = undefined;
    const at = now();
    for (const entry of holding) {
      const slice = entry.slice as Slice;
      if (entry.taking === undefined && (at - entry.lastUse >= IDLE_MS || at >= slice.expiresAt)) {
        giveBackSlice(entry, at);
      }
    }
    arm();
  }

  function arm(): void {
    if (timer !== undefined || holding.size === 0 || closed) return;
    timer = setTimeout(sweep, IDLE_MS);
    unref(timer);
  }

  function entryOf(head: string, set: RuleSet, at: number): Entry {
    const key = keyOf(head, set);
    let entry = entries.get(key);
    if (entry === undefined) {
      const oldest = entries.oldest();
      if (entries.size >= LEASE_KEYS && oldest !== undefined) {
        giveBackSlice(oldest.value, at);
        entries.delete(oldest.key);
      }
      entry = {
        head,
        set,
        tickStart: at,
        tickChecks: 0,
        lastTickChecks: 0,
        lastUse: at,
        coolUntil: 0,
        windowEnd: 0,
        slice: undefined,
        taking: undefined,
      };
      entries.set(key, entry);
    }
    return entry;
  }

  /** Outcomes of `cost` admitted from the slice: the store's share as of the take, plus the slice's units. */
  function fromSlice(slice: Slice, cost: number, at: number): RuleOutcome[] {
    const before = slice.units;
    slice.units = before - cost;
    const elapsed = at - slice.takenAt;
    return slice.outcomes.map(
      (outcome, i) =>
        new Evaluation(
          true,
          (slice.shared[i] as number) + before,
          outcome.resetMs,
          0,
          Math.max(0, outcome.resetAfterMs - elapsed),
          outcome.token,
        ),
    );
  }

  async function takeFor(entry: Entry, cost: number): Promise<readonly RuleOutcome[] | undefined> {
    const sentAt = now();
    const old = entry.slice;
    entry.slice = undefined;
    holding.delete(entry);
    const returned = old !== undefined && (sentAt < old.expiresAt || old.returnableLate) ? old.units : 0;
    const rate = Math.max(entry.tickChecks, entry.lastTickChecks) / TICK_MS;
    let sizing = sizings.get(entry.set);
    if (sizing === undefined) {
      sizing = sizingOf(entry.set);
      sizings.set(entry.set, sizing);
    }
    const horizon = horizonOf(entry, sizing.period, sentAt);
    const want = Math.max(cost, Math.min(sizing.max, Math.ceil(rate * cost * horizon)));
    const { rules } = entry.set;
    let reply: Leased | OverrideChanged | undefined;
    try {
      reply = await within(lease(entry.head, rules, cost, want, returned, old?.tokens ?? [], ''));
    } catch (error) {
      reply = undefined;
      failed(error);
    }
    if (reply === undefined) {
      entry.coolUntil = now() + COOL_MS;
      return undefined;
    }
    if ('overrideChanged' in reply) return undefined;
    if (returned > 0) sliced?.('returned');
    const { granted, outcomes } = reply;
    const expiresAt = sentAt + lifetimeOf(rules, outcomes);
    if (sizing.period !== undefined && granted > 0) entry.windowEnd = expiresAt;
    if (granted > cost && !closed) {
      entry.slice = {
        units: granted - cost,
        tokens: outcomes.map((outcome) => outcome.token),
        outcomes,
        shared: outcomes.map((outcome) => Math.max(0, outcome.remaining - granted)),
        takenAt: sentAt,
        expiresAt,
        returnableLate: rules.every((rule) => rule.algorithm.name !== 'fixed-window'),
      };
      holding.add(entry);
      arm();
      sliced?.('taken');
    }
    return outcomes;
  }

  return {
    local(head, set, cost) {
      const at = now();
      const entry = entryOf(head, set, at);
      entry.lastUse = at;
      if (at - entry.tickStart >= TICK_MS) {
        entry.lastTickChecks = at - entry.tickStart < 2 * TICK_MS ? entry.tickChecks : 0;
        entry.tickStart = at;
        entry.tickChecks = 0;
      }
      entry.tickChecks++;
      const slice = entry.slice;
      if (slice !== undefined && slice.units >= cost && at < slice.expiresAt) {
        return fromSlice(slice, cost, at);
      }
      if (entry.taking !== undefined) return TAKE;
      if (at < entry.coolUntil || closed) return undefined;
      if (slice === undefined && entry.tickChecks < HOT_CHECKS && entry.lastTickChecks < HOT_CHECKS) {
        return undefined;
      }
      return TAKE;
    },
    async take(head, set, cost) {
      const entry = entryOf(head, set, now());
      if (entry.taking !== undefined) {
        await entry.taking;
        return RETRY;
      }
      const taking = takeFor(entry, cost);
      entry.taking = taking;
      try {
        return await taking;
      } finally {
        entry.taking = undefined;
      }
    },
    giveBack(head) {
      const at = now();
      for (const entry of holding) if (entry.head === head) giveBackSlice(entry, at);
    },
    forget(head) {
      for (const entry of holding) {
        if (entry.head === head) {
          entry.slice = undefined;
          holding.delete(entry);
        }
      }
    },
    async close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      const at = now();
      for (const entry of holding) giveBackSlice(entry, at);
      // Within the deadline: a store that does not answer must not hold up a shutdown.
      await within(Promise.all(returning));
    },
  };
}
