/**
 * The contract every algorithm fulfils twice: as a pure TypeScript step function (the
 * specification, used directly by the memory store) and as a Lua twin (run inside Redis).
 * Both produce the same evaluation for the same state, time and cost (the Lua twin as six
 * integers) and settle a reservation the same way; the shared specification tests hold them to it.
 */

export type AlgorithmName =
  | 'fixed-window'
  | 'sliding-log'
  | 'sliding-window'
  | 'token-bucket'
  | 'gcra'
  | 'concurrency';

/** The numbers an algorithm needs, already validated (see rules.ts). */
export interface AlgorithmParams {
  /** Units admitted per window. */
  readonly limit: number;
  /** Window length in whole milliseconds. */
  readonly windowMs: number;
  /** Most units that can be available at once: `burst` for token-bucket and gcra, else `limit`. */
  readonly capacity: number;
  /** A calendar rule's periods (see calendar-window.ts); absent for every other rule. */
  readonly periods?: Periods;
  /** A calendar rule's thresholds in units (usage that reaches one crosses it), ascending; absent when none. */
  readonly thresholdUnits?: readonly number[];
}

/** Calendar periods (src/calendar/ makes them): the one that contains an instant. */
export interface Periods {
  /** The period containing `now` (epoch ms), as [start, end). */
  at(now: number): { readonly start: number; readonly end: number };
}

/**
 * What one rule says about one request, before the all-or-nothing decision across rules.
 * `remaining` and `resetMs` describe the state *without* this request; `resetAfterMs` is the
 * reset time if this request is consumed, which is also how long the committed state (see
 * Algorithm.commit) matters: past it, it is equivalent to no state at all. `retryAfterMs` is 0 when allowed and -1 when the cost
 * can never pass (it exceeds the capacity).
 *
 * A class, not an object literal in each algorithm: the literals shared one shape, but code that
 * met two algorithms' evaluations (a limiter with rules of two algorithms, or two limiters in one
 * process) missed V8's inline cache on every check (it kept recomputing the handler of the load of
 * `allowed`).
 */
export class Evaluation {
  // Declared only: class fields would first define each as undefined, then assign it.
  declare readonly allowed: boolean;
  declare readonly remaining: number;
  declare readonly resetMs: number;
  declare readonly retryAfterMs: number;
  declare readonly resetAfterMs: number;
  /**
   * What `settle` needs to find this request's units again: the window's start for the window
   * algorithms, the entry's time for sliding-log, 0 for the buckets (whose state has no parts).
   */
  declare readonly token: number;
  /** Denied because the rule's block holds the key (see block.ts); false for every other outcome. */
  declare readonly blocked: boolean;
  /**
   * A calendar rule's thresholds this check crosses if it is consumed (see calendar-window.ts),
   * as a bit mask over the rule's thresholds in ascending order; 0 for every other outcome.
   */
  declare readonly crossed: number;

  constructor(
    allowed: boolean,
    remaining: number,
    resetMs: number,
    retryAfterMs: number,
    resetAfterMs: number,
    token: number,
    blocked = false,
    crossed = 0,
  ) {
    this.allowed = allowed;
    this.remaining = remaining;
    this.resetMs = resetMs;
    this.retryAfterMs = retryAfterMs;
    this.resetAfterMs = resetAfterMs;
    this.token = token;
    this.blocked = blocked;
    this.crossed = crossed;
  }
}

/** A reservation being settled: its token, the cost it reserved and the cost it really had. */
export interface Settlement {
  readonly token: number;
  readonly reserved: number;
  readonly actual: number;
}

/** A settle's effect on one rule's state: a new state and its ttl, `'delete'`, or undefined (unchanged). */
export type SettleResult<S> = { state: S; ttlMs: number } | 'delete' | undefined;

/** What releasing or renewing one request's slots did: how many live slots it touched, and the new state. */
export interface SlotChange<S> {
  readonly slots: number;
  readonly result: SettleResult<S>;
}

/** Marks "can never be allowed" in the raw results, which must stay plain integers for Lua. */
export const NEVER = -1;

export interface Algorithm<S> {
  readonly name: AlgorithmName;
  /** Short tag used in Redis key names, so two algorithms never read each other's state. */
  readonly tag: string;
  /** Dispatch number used by the Lua script. */
  readonly code: number;
  /** Whether the rule accepts a `burst` option. */
  readonly hasBurst: boolean;
  /** Suffixes of the Redis keys this algorithm uses, appended to the rule's base key. */
  readonly keySuffixes: readonly string[];
  /**
   * Whether its state holds the key's own time, so that a clock stamp a little behind it is taken
   * at that time and decides exactly (see docs/algorithms.md). A Redis store stamps only checks
   * whose every rule does; the others read the server's TIME in the script.
   */
  readonly keepsKeyTime: boolean;
  /** Largest `limit` this algorithm accepts (sliding-log stores one entry per request). */
  readonly maxLimit: number;
  /** The specification: a pure function of the stored state, the time and the cost. */
  evaluate(state: S | undefined, now: number, cost: number, params: AlgorithmParams): Evaluation;
  /**
   * The state after consuming `cost` at `now` from `state`, called only when `evaluate` of the
   * same arguments allowed it (and every other rule did). It updates `state` in place when there
   * is one: the memory store owns its states, and a check that allocates nothing is faster.
   * With no `state`, `spare` (a state of this algorithm that no longer matters, past its expiry)
   * may be overwritten rather than a new one allocated. The buckets do: one under its limit
   * expires within milliseconds and its key is back soon after, and a new state per check would
   * live just long enough to leave V8's young generation and cost GC time. The window
   * algorithms' states outlive their keys' checks, so they ignore it.
   */
  commit(state: S | undefined, now: number, cost: number, params: AlgorithmParams, spare?: S): S;
  /**
   * Applies `actual − reserved` to the state an admitted request left behind: a refund never
   * takes usage below zero, a charge never takes it past twice the capacity (one capacity of
   * debt), and neither ever touches units counted in a window that has already ended.
   */
  settle(state: S | undefined, now: number, settlement: Settlement, params: AlgorithmParams): SettleResult<S>;
  /**
   * Algorithms whose units are held and given back (concurrency): `release` frees the slots of
   * the request whose check returned `token`, `renew` extends their lease from `now`. Both touch
   * only that request's slots, so repeating either is harmless.
   */
  readonly slots?: {
    /**
     * What `reset` leaves of a state: no slot held, but the last id, so that ids handed out
     * after the reset never repeat one handed out before it. Redis keeps the id's key (the
     * last of `keySuffixes`) through a reset for the same reason.
     */
    reset(state: S | undefined, now: number): SettleResult<S>;
    release(state: S | undefined, now: number, token: number, params: AlgorithmParams): SlotChange<S>;
    renew(state: S | undefined, now: number, token: number, params: AlgorithmParams): SlotChange<S>;
  };
  /**
   * The Lua twin: a chunk that defines `EVALUATORS[code] = function(k, L, W, B, cost)` returning
   * allowed (0/1), remaining, resetMs, retryAfterMs, resetAfterMs, token, then a commit function
   * and up to four arguments for it (called as `commit(k, cost, ...)` when every rule allows), and
   * `SETTLERS[code] = function(k, L, W, B, token, reserved, delta)`; with `slots`, also
   * `RELEASERS[code]` and `RENEWERS[code] = function(k, L, W, B, token, cost)` returning the
   * number of live slots touched. `k` is the index of the rule's first key in KEYS; `now` and the
   * helpers of the preamble (`fmt`, `fmtFresh` for numbers that change every millisecond,
   * `adjust`, and `get`, `put`, `del` for string keys, which a batch reads with one MGET) are in
   * scope.
   */
  readonly lua: string;
}

/**
 * Usage after a settle's `delta`: a refund stops at zero; a charge stops at `most` (and never
 * lowers usage that is already above it, e.g. after an override lowered the limit).
 */
export function adjust(used: number, delta: number, most: number): number {
  if (delta < 0) return Math.max(0, used + delta);
  return Math.max(used, Math.min(used + delta, most));
}
