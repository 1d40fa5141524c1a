/**
 * Calls the store the way a gateway needs it called: within a deadline, not at all while the
 * circuit is open, and with a configured answer when it fails (allow, deny, or a fallback store
 * that enforces the same rules locally). It reports what happened through `degraded` and events;
 * it never retries a failed or timed-out call, which may already have been applied.
 */
import { answerLocally } from '../base/local-answers.js';
import type { Degraded, ResolvedRule } from '../base/types.js';
import { StoreClosedError, StoreTimeoutError } from '../errors.js';
import type { EvaluateReceiver, EvaluateReply, RuleOutcome, SlotAction, Store } from '../stores/types.js';
import type { CircuitBreaker } from './breaker.js';
import { createDeadlines, TIMED_OUT, type Tracked } from './deadline.js';

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

type Failure = { ok: false; reason: Exclude<Degraded, false> };
type Attempt<T> = { ok: true; value: T } | Failure;

const UNAVAILABLE: Failure = { ok: false, reason: 'unavailable' };
const TIMED_OUT_ATTEMPT: Failure = { ok: false, reason: 'timeout' };
const FAILED_ATTEMPT: Failure = { ok: false, reason: 'error' };

export function createStoreCaller(
  store: Store,
  timeoutMs: number,
  policy: StoreErrorPolicy,
  newBreaker: (() => CircuitBreaker) | undefined,
  events: StoreCallerEvents,
  clock: () => number,
): StoreCaller {
  // In-process stores cannot hang or fail transiently: call them directly, with no timer.
  if (store.local === true) {
    return {
      async call(head, rules, cost, consume, overrideSeen) {
        return { reply: await store.evaluate(head, rules, cost, consume, overrideSeen), degraded: false };
      },
      async settle(_where, head, rules, reserved, actual, tokens, refund) {
        await store.settle(head, rules, reserved, actual, tokens, refund);
        return true;
      },
      slots: (_where, head, rules, cost, tokens, action) => slotsOf(store, head, rules, cost, tokens, action),
    };
  }
  // One breaker per cluster slot when the store is partitioned: a failed node must not cut off
  // the keys that healthy nodes serve. At most 16,384 slots, so the map stays bounded.
  const single = newBreaker?.();
  const perShard = new Map<number, CircuitBreaker>();
  function breakerFor(head: string): CircuitBreaker | undefined {
    if (newBreaker === undefined || store.shardOf === undefined) return single;
    const shard = store.shardOf(head);
    let breaker = perShard.get(shard);
    if (breaker === undefined) {
      breaker = newBreaker();
      perShard.set(shard, breaker);
    }
    return breaker;
  }
  const deadlines = createDeadlines(timeoutMs);
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
      return { reply: await policy.evaluate(head, rules, cost, consume), degraded: reason };
    }
    const waitMs = Math.max(1, breakerFor(head)?.retryInMs(clock()) ?? 0, timeoutMs);
    // 'open' admits as if the key were fresh; 'closed' denies with a wait until the next probe.
    const outcomes = rules.map(
      (rule): RuleOutcome =>
        policy === 'open'
          ? {
              allowed: true,
              remaining: rule.capacity,
              resetMs: 0,
              retryAfterMs: 0,
              resetAfterMs: 0,
              token: 0,
            }
          : {
              allowed: false,
              remaining: 0,
              resetMs: waitMs,
              retryAfterMs: waitMs,
              resetAfterMs: waitMs,
              token: 0,
            },
    );
    return { reply: { outcomes }, degraded: reason };
  }

  /** A call answered within the deadline: the circuit closes again and a degraded store has recovered. */
  function answered(breaker: CircuitBreaker | undefined): void {
    breaker?.succeed();
    if (!healthy) {
      healthy = true;
      events.recovered();
    }
  }

  /** A call past its deadline; its late answer is swallowed by the deadline. */
  function timedOut(breaker: CircuitBreaker | undefined): Failure {
    breaker?.fail(clock());
    failed('timeout', new StoreTimeoutError(timeoutMs));
    return TIMED_OUT_ATTEMPT;
  }

  /** A call that failed; a closed store is the application's doing, not a failure to ride out (see errors.ts). */
  function rejected(breaker: CircuitBreaker | undefined, error: unknown): Failure {
    if (error instanceof StoreClosedError) throw error;
    breaker?.fail(clock());
    failed('error', error);
    return FAILED_ATTEMPT;
  }

  /** `work`'s answer within the deadline, whether it returned a value, a promise or threw. */
  function withinDeadline<T>(work: () => T | Promise<T>): Promise<T | typeof TIMED_OUT> {
    let answer: T | Promise<T>;
    try {
      answer = work();
    } catch (error) {
      answer = Promise.reject(error);
    }
    return deadlines.within(answer instanceof Promise ? answer : Promise.resolve(answer));
  }

  /** Runs one store call within the deadline, unless the circuit is open; never rejects. */
  function attempt<T>(head: string, work: () => T | Promise<T>): Promise<Attempt<T>> {
    const breaker = breakerFor(head);
    if (breaker !== undefined && !breaker.allow(clock())) return Promise.resolve(answerLocally(UNAVAILABLE));
    return withinDeadline(work).then(
      (outcome): Attempt<T> => {
        if (outcome === TIMED_OUT) return timedOut(breaker);
        answered(breaker);
        return { ok: true, value: outcome };
      },
      (error: unknown): Attempt<T> => rejected(breaker, error),
    );
  }

  /**
   * One check's store call: its own deadline entry and its own receiver (of Store.evaluateWith, or
   * of the promise evaluate returns), so a check allocates one object and one promise here
   * instead of a promise and two callbacks per layer.
   */
  class StoreCall implements Tracked, EvaluateReceiver {
    expiresAt = Number.POSITIVE_INFINITY;
    pending = true;
    constructor(
      readonly head: string,
      readonly rules: readonly ResolvedRule[],
      readonly cost: number,
      readonly consume: boolean,
      readonly breaker: CircuitBreaker | undefined,
      readonly resolve: (result: StoreCallResult | Promise<StoreCallResult>) => void,
      readonly reject: (error: unknown) => void,
    ) {}

    answered(reply: EvaluateReply): void {
      if (!deadlines.answer(this)) return;
      answered(this.breaker);
      this.resolve({ reply, degraded: false });
    }

    failed(error: unknown): void {
      if (!deadlines.answer(this)) return;
      try {
        this.resolve(this.fallback(rejected(this.breaker, error).reason));
      } catch (closed) {
        this.reject(closed);
      }
    }

    expire(): void {
      this.resolve(this.fallback(timedOut(this.breaker).reason));
    }

    fallback(reason: Exclude<Degraded, false>): Promise<StoreCallResult> {
      return fallback(reason, this.head, this.rules, this.cost, this.consume);
    }
  }

  const evaluateWith = store.evaluateWith?.bind(store);

  return {
    // The same steps as attempt, in one callback: this runs once per check, and each layer costs a promise.
    call(head, rules, cost, consume, overrideSeen) {
      const breaker = breakerFor(head);
      if (breaker !== undefined && !breaker.allow(clock())) {
        return Promise.resolve(answerLocally(UNAVAILABLE)).then((failure) =>
          fallback(failure.reason, head, rules, cost, consume),
        );
      }
      return new Promise((resolve, reject) => {
        const call = new StoreCall(head, rules, cost, consume, breaker, resolve, reject);
        deadlines.track(call);
        try {
          if (evaluateWith !== undefined) {
            evaluateWith(head, rules, cost, consume, overrideSeen, call);
            return;
          }
          const answer = store.evaluate(head, rules, cost, consume, overrideSeen);
          if (!(answer instanceof Promise)) return call.answered(answer);
          answer.then(
            (reply) => call.answered(reply),
            (error: unknown) => call.failed(error),
          );
        } catch (error) {
          call.failed(error);
        }
      });
    },
    async settle(where, head, rules, reserved, actual, tokens, refund) {
      const settled = await whereReserved(where, head, (target) =>
        target.settle(head, rules, reserved, actual, tokens, refund).then(() => true),
      );
      return settled === true;
    },
    slots(where, head, rules, cost, tokens, action) {
      return whereReserved(where, head, (target) => slotsOf(target, head, rules, cost, tokens, action));
    },
  };

  /**
   * Runs `work` on the store where a reservation was made: the configured store (within the
   * deadline, not while the circuit is open) or the fallback. Resolves undefined when it failed.
   */
  async function whereReserved<T>(
    where: 'store' | 'fallback',
    head: string,
    work: (target: Store) => Promise<T>,
  ): Promise<T | undefined> {
    if (where === 'fallback') return typeof policy === 'object' ? work(policy) : undefined;
    try {
      const outcome = await attempt(head, () => work(store));
      return outcome.ok ? outcome.value : undefined;
    } catch (error) {
      // A closed store (the one error attempt passes on): reported, never thrown, as any failure.
      events.storeError(error);
      return undefined;
    }
  }
}

/** A store's `slots`, which the limiter made sure it has when any rule holds slots. */
function slotsOf(
  store: Store,
  head: string,
  rules: readonly ResolvedRule[],
  cost: number,
  tokens: readonly number[],
  action: SlotAction,
): Promise<number> {
  return (store.slots as NonNullable<Store['slots']>)(head, rules, cost, tokens, action);
}
