/** The store caller's contract with the limiter and core/, and the failures its parts pass around. */
import type { Degraded, ResolvedRule } from '../base/types.js';
import type { EvaluateReply, SlotAction, Store } from '../stores/types.js';

/** `'open'`: allow and flag; `'closed'`: deny and flag; a Store: enforce the rules there instead. */
export type StoreErrorPolicy = 'open' | 'closed' | Store;

export interface StoreCallResult {
  /** Only the configured store answers `OverrideChanged`: a fallback is never asked about overrides. */
  reply: EvaluateReply;
  degraded: Degraded;
}

export interface StoreCallerEvents {
  degraded(reason: Exclude<Degraded, false>, cause: unknown): void;
  recovered(): void;
  storeError(cause: unknown): void;
}

export interface StoreCaller {
  call(
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
    overrideSeen?: string,
  ): Promise<StoreCallResult>;
  /**
   * Settles a reservation where it was made: in the configured store (within the deadline, not
   * while the circuit is open) or in the fallback store. A failure is reported through the events
   * and resolves `false`; it is never retried or thrown.
   */
  settle(
    where: 'store' | 'fallback',
    head: string,
    rules: readonly ResolvedRule[],
    reserved: number,
    actual: number,
    tokens: readonly number[],
    refund: boolean,
  ): Promise<boolean>;
  /**
   * Releases or renews a request's slots where they were taken, as `settle` goes there. Resolves
   * the number of slots still held, or undefined when the store failed (reported, never thrown).
   */
  slots(
    where: 'store' | 'fallback',
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    tokens: readonly number[],
    action: SlotAction,
  ): Promise<number | undefined>;
}

/** A store call that did not answer, and why. */
export type Failure = { ok: false; reason: Exclude<Degraded, false> };
