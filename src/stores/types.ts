/**
 * The store contract: where rule state lives. A store knows nothing about individual
 * algorithms; it runs the rules it is given against the state under one key head.
 */
import type { ResolvedRule } from '../rules.js';

export interface Store {
  /** A short name for logs and errors, e.g. `'memory'` or `'redis'`. */
  readonly kind: string;
  /**
   * True for stores that answer in this process and cannot hang or fail transiently (the memory
   * store): the limiter then calls them without a deadline or circuit breaker.
   */
  readonly local?: boolean;
  /**
   * The clock the store was given for tests and simulations, if any. The limiter then measures
   * local waits (deny cache, circuit breaker) with it too, so simulated time stays consistent.
   */
  readonly clock?: () => number;
  /**
   * Evaluates every rule for the key whose Redis-style head is `head` (see keys.ts) and, when
   * `consume` is set and all rules allow, consumes `cost` from each, atomically.
   * Returns (or resolves to) RAW_FIELDS numbers per rule (see decision.ts); in-process stores
   * answer synchronously, which spares the hot path a promise.
   */
  evaluate(
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
  ): ArrayLike<number> | Promise<ArrayLike<number>>;
  /** Forgets all state of the rules under `head`. */
  reset(head: string, rules: readonly ResolvedRule[]): Promise<void>;
}
