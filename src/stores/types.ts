/**
 * The store contract: where rule state lives. A store knows nothing about individual
 * algorithms; it runs the rules it is given against the state under one key head. It also keeps
 * each key's runtime override as an opaque string (the limiter interprets it) and checks it on
 * the way, so the hot path needs no extra round trip.
 */
import type { ResolvedRule } from '../base/types.js';
import type { OpenQueues } from './queue-types.js';

/**
 * A store's answer to `evaluate` when asked to check the key's override (`overrideSeen`) and it
 * holds a different one: nothing was evaluated. `value` is the override now stored, if any.
 */
export interface OverrideChanged {
  readonly overrideChanged: true;
  readonly value: string | undefined;
}

/**
 * What one rule says about one check, before the all-or-nothing decision across rules (the
 * algorithms' `Evaluation` is one). `remaining` and `resetMs` describe the state without this
 * check; `resetAfterMs` is the reset time had it been consumed.
 */
export interface RuleOutcome {
  readonly allowed: boolean;
  readonly remaining: number;
  readonly resetMs: number;
  /** 0 when allowed; -1 (`NEVER`) when the cost exceeds the rule's capacity. */
  readonly retryAfterMs: number;
  readonly resetAfterMs: number;
  /** What `settle` needs to find this check's units again (see Evaluation.token). */
  readonly token: number;
  /** True when denied because the rule's block holds the key (see algorithms/block.ts). */
  readonly blocked?: boolean;
  /** A calendar rule's thresholds this check crosses if consumed, as a bit mask (see Evaluation.crossed). */
  readonly crossed?: number;
}

/** A store's answer to `evaluate` when it evaluated the rules. */
export interface Evaluated {
  /** One outcome per rule, in the order of the rules given. */
  readonly outcomes: readonly RuleOutcome[];
  /**
   * Only when asked with an `overrideSeen` other than `''` that matched: the override's remaining
   * milliseconds (`Infinity`: no expiry).
   */
  readonly overrideTtlMs?: number;
}

/** A store's answer to `lease`: the units taken (0: denied, nothing taken) and each rule's outcome. */
export interface Leased {
  /** Units taken from every rule, from `cost` to the units asked for; 0 when some rule denied `cost`. */
  readonly granted: number;
  /** Per rule, the outcome of a check of `granted` units (of `cost` when denied). */
  readonly outcomes: readonly RuleOutcome[];
}

/** The rules' outcomes, or the news that the key's override changed. */
export type EvaluateReply = Evaluated | OverrideChanged;

/**
 * A key's head as the limiter caches it, with an in-process store's handle to the key's state:
 * a check then reaches its state without looking the key up again.
 */
export interface CachedHead {
  readonly head: string;
  /** The head's parts (see base/key-encoding.ts headOf): the limiter's prefix and the encoded key. */
  readonly prefix: string;
  readonly encoded: string;
  /** The store's own, opaque to the limiter; undefined until the store sets it. */
  handle: unknown;
}

/** The synchronous fast path of an in-process store (see Store.inProcess). */
export interface InProcessPath {
  /**
   * `evaluate` with no override known to the caller (`overrideSeen` `''`), for a cached head:
   * the outcomes themselves (no `Evaluated` around them, one allocation fewer per check).
   */
  evaluate(
    cached: CachedHead,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
  ): readonly RuleOutcome[] | OverrideChanged;
  /** The store's bound on the keys it holds: the limiter caches as many heads. */
  readonly maxKeys: number;
}

/** Where a store's callback path (`Store.evaluateWith`) delivers its answer: exactly one call, once. */
export interface EvaluateReceiver {
  answered(reply: EvaluateReply): void;
  failed(error: unknown): void;
}

/** What `Store.slots` does with a request's concurrency slots. */
export type SlotAction = 'release' | 'renew';

/** One key's override as a store lists it. */
export interface StoredOverride {
  /** The user's key (as given to `check`). */
  readonly key: string;
  /** The opaque value the limiter stored. */
  readonly value: string;
  /** Milliseconds until it expires, or undefined when it has no ttl. */
  readonly expiresInMs: number | undefined;
}

/** One key in a heavy-hitter sketch: its true count is between `count - error` and `count`. */
export interface TopEntry {
  key: string;
  /** An upper bound of the key's true count. */
  count: number;
  /** How much of `count` may be another key's: the true count is at least `count - error`. */
  error: number;
}

/** What a heavy-hitter sketch counts: every check of a key, or its denials. */
export type TopBy = 'denied' | 'checked';

/**
 * A sketch's counters, most first, and its floor: a key it does not list was counted at most
 * `floor` times (0 when nothing was left out).
 */
export interface Sketch {
  readonly entries: readonly TopEntry[];
  readonly floor: number;
}

/**
 * The fleet's heavy hitters in a shared store: every process merges what it counted since its
 * last merge, and any process reads the sum. Bounded: at most `capacity` keys per sketch.
 */
export interface FleetSketches {
  /**
   * Adds each measure's counts since the last merge to the fleet's sketches under `prefix`; a
   * sketch counts for `periodMs`, then becomes the previous one (dropped a period later).
   */
  merge(prefix: string, periodMs: number, capacity: number, checked: Sketch, denied: Sketch): Promise<void>;
  /** The fleet's sketches of one measure now: the current period's and the one before it. */
  read(prefix: string, by: TopBy, periodMs: number): Promise<readonly Sketch[]>;
}

/** A shared reservoir's settings (see SharedReservoirs); null: not set. */
export interface ReservoirSettings {
  readonly reservoir: number | null;
  readonly refreshInterval: number | null;
  readonly refreshAmount: number | null;
  readonly increaseInterval: number | null;
  readonly increaseAmount: number | null;
  readonly increaseMaximum: number | null;
}

/** A shared reservoir after an operation. */
export interface ReservoirState {
  /** Whether a take took its weight (always true for the other operations, and with no reservoir). */
  readonly taken: boolean;
  /** The level; null when no reservoir is set. */
  readonly level: number | null;
  /** Milliseconds to the next refresh or increase; undefined when none is set. */
  readonly nextMs: number | undefined;
  /** When the last refresh was due, on the store's clock (-1: none): names the level's refresh for `giveBack`. */
  readonly refill: number;
}

/**
 * Reservoirs of weight shared by every process on the store (floodgate/bottleneck's reservoir
 * for limiters with one id), refreshed and increased on the store's clock.
 */
export interface SharedReservoirs {
  /** Sets the reservoir of a key (by its head) unless one is there already (`clear`: replaces it). */
  init(head: string, settings: ReservoirSettings, clear: boolean): Promise<ReservoirState>;
  /** Changes the settings given; a new interval or amount restarts the intervals from now. */
  update(head: string, settings: Partial<ReservoirSettings>): Promise<ReservoirState>;
  /** Takes `weight` if the level allows it (a key without a reservoir always allows). */
  take(head: string, weight: number): Promise<ReservoirState>;
  /** Adds `amount` to the level (a key without a reservoir starts from 0). */
  add(head: string, amount: number): Promise<ReservoirState>;
  /** Returns a take's `weight` unless a refresh came after the take's (`refill`): it set the level afresh. */
  giveBack(head: string, weight: number, refill: number): Promise<ReservoirState>;
}

/** A risk found in a store's own configuration at run time (see the limiter's `warning` event). */
/** What a limiter's rules need of a store, for `inspect`. */
export interface InspectNeeds {
  /** Some rule counts by calendar period (a day or longer), whose counts must survive restarts and memory pressure. */
  readonly calendar?: boolean;
}

export interface StoreWarning {
  /** What was found, e.g. `'maxmemory-policy'`. */
  readonly code: string;
  /** What it risks and what to configure instead. */
  readonly message: string;
}

export interface Store {
  /** A short name for logs and errors, e.g. `'memory'` or `'redis'`. */
  readonly kind: string;
  /**
   * True for stores that answer in this process and cannot hang or fail transiently (the memory
   * store): the limiter then calls them without a deadline or circuit breaker.
   */
  readonly local?: boolean;
  /**
   * An in-process store's synchronous fast path, which the limiter takes for keys with no
   * override known. Optional; a wrapper around a store (one that times its calls) leaves it out.
   */
  readonly inProcess?: InProcessPath;
  /**
   * The clock the store was given for tests and simulations, if any. The limiter then measures
   * local waits (deny cache, circuit breaker) with it too, so simulated time stays consistent.
   */
  readonly clock?: () => number;
  /**
   * For stores spread over independent nodes (Redis Cluster): which part serves `head`. The
   * limiter then keeps its circuit breaker per part, so one failed node does not cut off others.
   */
  shardOf?(head: string): number;
  /**
   * Evaluates every rule for the key whose Redis-style head is `head` (see base/key-encoding.ts) and, when
   * `consume` is set and all rules allow, consumes `cost` from each, atomically. A rule with
   * `counts: 'requests'` is evaluated and consumed at 1 whatever the cost (see ruleCost in base/types.ts).
   * Returns (or resolves to) one outcome per rule; in-process stores answer synchronously, which
   * spares the hot path a promise.
   *
   * With `overrideSeen` (the override value the caller decided the rules with, `''` for none),
   * the store first compares it with the key's stored override: if they differ it evaluates
   * nothing and answers `OverrideChanged`; if they match and `overrideSeen` is not `''`, the reply
   * also carries the override's remaining milliseconds (`overrideTtlMs`).
   */
  evaluate(
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
    overrideSeen?: string,
  ): EvaluateReply | Promise<EvaluateReply>;
  /**
   * `evaluate`, answered through `receiver` instead of a promise. Optional: a remote store's path
   * for the limiter, sparing a promise and a turn of the microtask queue per check.
   */
  evaluateWith?(
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
    overrideSeen: string | undefined,
    receiver: EvaluateReceiver,
  ): void;
  /**
   * Settles an admitted request that reserved `reserved` units and really used `actual`, given
   * the token each rule's outcome carried for it, on every rule atomically; a rule that counts
   * requests took 1 whatever the cost and is left as it is, unless `refund` (with `actual` 0):
   * then it gives its 1 back too, as if the request had never been checked.
   */
  settle(
    head: string,
    rules: readonly ResolvedRule[],
    reserved: number,
    actual: number,
    tokens: readonly number[],
    refund?: boolean,
  ): Promise<void>;
  /**
   * Releases (`'release'`) or renews (`'renew'`) the slots an admitted request of `cost` holds on
   * `rules` (concurrency rules; 1 slot on a rule that counts requests), given the token each rule returned for it, atomically. Resolves
   * the number of slots that were still held (their lease not run out). Stores without it cannot
   * run concurrency rules.
   */
  slots?(
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    tokens: readonly number[],
    action: SlotAction,
  ): Promise<number>;
  /**
   * Takes a quota slice for `rules` (all leasable, without blocks) of the key under `head`, in one
   * atomic call: first gives back `returned` unused units of the caller's last slice (its rules'
   * `tokens`), then takes up to `want` units (at least `cost`) from every rule, as many as each
   * admits now (see core/leases.ts). Compares the key's override with `overrideSeen` first, as
   * `evaluate` does. Stores without it cannot lease: the limiter then checks each request.
   */
  lease?(
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    want: number,
    returned: number,
    tokens: readonly number[],
    overrideSeen: string,
  ): Promise<Leased | OverrideChanged>;
  /**
   * Risks in the store's configuration, looked up once (later calls share the answer), e.g. a
   * Redis `maxmemory-policy` that may evict overrides; with `needs`, also the risks to what the
   * rules need (quotas kept for days). Resolves empty when it cannot tell; never rejects. Optional.
   */
  inspect?(needs?: InspectNeeds): Promise<readonly StoreWarning[]>;
  /**
   * The scheduler's shared queues on this store (see queue-types.ts): a new participant per call.
   * Stores without it cannot back a scheduler.
   */
  readonly queues?: OpenQueues;
  /**
   * The fleet's heavy-hitter sketches in this store (see telemetry/fleet.ts). Stores without it
   * (the memory store: one process is the fleet) answer `top({ fleet: true })` from the process's own.
   */
  readonly sketches?: FleetSketches;
  /** Reservoirs shared across processes (floodgate/bottleneck); a store without it keeps them per process. */
  readonly reservoirs?: SharedReservoirs;
  /** Forgets all state of the rules under `head` (not its override). */
  reset(head: string, rules: readonly ResolvedRule[]): Promise<void>;
  /** Stores `value` as the override of `key` under `prefix`, for `ttlMs` (undefined: until cleared). */
  setOverride(prefix: string, key: string, value: string, ttlMs: number | undefined): Promise<void>;
  /** Removes the override of `key` under `prefix`, if any. */
  clearOverride(prefix: string, key: string): Promise<void>;
  /** Every live override under `prefix`, in no particular order. */
  listOverrides(prefix: string): Promise<StoredOverride[]>;
}
