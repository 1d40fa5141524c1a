/**
 * Calls the store the way a gateway needs it called: within a deadline, not at all while the
 * circuit is open, and with a configured answer when it fails (allow, deny, or a fallback store
 * that enforces the same rules locally). It reports what happened through `degraded` and events;
 * it never retries a failed or timed-out call, which may already have been applied.
 */
import { answerLocally } from '../base/local-answers.js';
import type { ResolvedRule } from '../base/types.js';
import type { SlotAction, Store } from '../stores/types.js';
import type { CircuitBreaker } from './breaker.js';
import { createCallEnds } from './call-ends.js';
import { createDeadlines, TIMED_OUT } from './deadline.js';
import { createHealth } from './health.js';
import { createPolicyAnswer } from './policy-answer.js';
import { createShards } from './shards.js';
import { type CallContext, StoreCall } from './store-call.js';
import type { Failure, StoreCaller, StoreCallerEvents, StoreErrorPolicy } from './types.js';

export type { StoreCaller, StoreCallerEvents, StoreCallResult, StoreErrorPolicy } from './types.js';

type Attempt<T> = { ok: true; value: T } | Failure;

export function createStoreCaller(
  store: Store,
  timeoutMs: number,
  policy: StoreErrorPolicy,
  newBreaker: (() => CircuitBreaker) | undefined,
  events: StoreCallerEvents,
  clock: () => number,
): StoreCaller {
  if (store.local === true) return createLocalCaller(store);
  const shardOf = createShards(store, newBreaker);
  const health = createHealth(events, clock);
  const ends = createCallEnds(timeoutMs, health, events, clock);
  const context: CallContext = {
    deadlines: createDeadlines(timeoutMs),
    ends,
    answerByPolicy: createPolicyAnswer(policy, timeoutMs, clock),
  };

  /** `work`'s answer within the deadline, whether it returned a value, a promise or threw. */
  function withinDeadline<T>(work: () => T | Promise<T>): Promise<T | typeof TIMED_OUT> {
    let answer: T | Promise<T>;
    try {
      answer = work();
    } catch (error) {
      answer = Promise.reject(error);
    }
    return context.deadlines.within(answer instanceof Promise ? answer : Promise.resolve(answer));
  }

  /** Runs one store call within the deadline, unless the circuit is open; never rejects. */
  function attempt<T>(head: string, work: () => T | Promise<T>): Promise<Attempt<T>> {
    const shard = shardOf(head);
    if (!ends.allow(shard)) return Promise.resolve(answerLocally(ends.cutOff(shard)));
    const issued = health.issue();
    return withinDeadline(work).then(
      (outcome): Attempt<T> => {
        if (outcome === TIMED_OUT) return ends.timedOut(shard, issued);
        ends.answered(shard, issued);
        return { ok: true, value: outcome };
      },
      (error: unknown): Attempt<T> => ends.rejected(shard, issued, error),
    );
  }

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

  const evaluateWith = store.evaluateWith?.bind(store);

  return {
    // The same steps as attempt, in one callback: this runs once per check, and each layer costs a promise.
    call(head, rules, cost, consume, overrideSeen) {
      const shard = shardOf(head);
      if (!ends.allow(shard)) {
        return Promise.resolve(answerLocally(ends.cutOff(shard))).then((failure) =>
          context.answerByPolicy(failure.reason, shard, head, rules, cost, consume),
        );
      }
      return new Promise((resolve, reject) => {
        const call = new StoreCall(
          context,
          shard,
          health.issue(),
          head,
          rules,
          cost,
          consume,
          resolve,
          reject,
        );
        context.deadlines.track(call);
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
}

/** In-process stores cannot hang or fail transiently: called directly, with no timer. */
function createLocalCaller(store: Store): StoreCaller {
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
