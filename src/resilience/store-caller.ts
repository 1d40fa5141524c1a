/**
 * Calls the store the way a gateway needs it called: within a deadline, not at all while the
 * circuit is open, and with a configured answer when it fails (allow, deny, or a fallback store
 * that enforces the same rules locally). It reports what happened through `degraded` and events;
 * it never retries a failed or timed-out call, which may already have been applied.
 */
import type { ResolvedRule } from '../rules.js';
import type { Store } from '../stores/types.js';
import type { CircuitBreaker } from './breaker.js';
import { TIMED_OUT, withDeadline } from './deadline.js';

/** Why a decision was not made by the configured store: `false` when it was. */
export type Degraded = false | 'timeout' | 'unavailable' | 'error';

/** `'open'`: allow and flag; `'closed'`: deny and flag; a Store: enforce the rules there instead. */
export type StoreErrorPolicy = 'open' | 'closed' | Store;

export interface StoreCallResult {
  raw: ArrayLike<number>;
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
  ): Promise<StoreCallResult>;
}

export class StoreTimeoutError extends Error {
  constructor(ms: number) {
    super(`floodgate: the store did not answer within ${ms} ms`);
    this.name = 'StoreTimeoutError';
  }
}

export function createStoreCaller(
  store: Store,
  timeoutMs: number,
  policy: StoreErrorPolicy,
  breaker: CircuitBreaker | undefined,
  events: StoreCallerEvents,
  clock: () => number,
): StoreCaller {
  let healthy = true;

  function failed(reason: Exclude<Degraded, false>, cause: unknown): void {
    events.storeError(cause);
    if (healthy) {
      healthy = false;
      events.degraded(reason, cause);
    }
  }

  async function fallback(
    reason: Exclude<Degraded, false>,
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
  ): Promise<StoreCallResult> {
    if (typeof policy === 'object') {
      return { raw: await policy.evaluate(head, rules, cost, consume), degraded: reason };
    }
    const raw: number[] = [];
    const waitMs = Math.max(1, breaker?.retryInMs(clock()) ?? 0, timeoutMs);
    for (const rule of rules) {
      // 'open' admits as if the key were fresh; 'closed' denies with a wait until the next probe.
      if (policy === 'open') raw.push(1, rule.capacity, 0, 0, 0);
      else raw.push(0, 0, waitMs, waitMs, waitMs);
    }
    return { raw, degraded: reason };
  }

  return {
    async call(head, rules, cost, consume) {
      if (breaker !== undefined && !breaker.allow(clock())) {
        return fallback('unavailable', head, rules, cost, consume);
      }
      let outcome: ArrayLike<number> | typeof TIMED_OUT;
      try {
        outcome = await withDeadline(Promise.resolve(store.evaluate(head, rules, cost, consume)), timeoutMs);
      } catch (error) {
        breaker?.fail(clock());
        failed('error', error);
        return fallback('error', head, rules, cost, consume);
      }
      if (outcome === TIMED_OUT) {
        breaker?.fail(clock());
        failed('timeout', new StoreTimeoutError(timeoutMs));
        return fallback('timeout', head, rules, cost, consume);
      }
      breaker?.succeed();
      if (!healthy) {
        healthy = true;
        events.recovered();
      }
      return { raw: outcome, degraded: false };
    },
  };
}
