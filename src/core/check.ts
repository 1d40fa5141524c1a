/**
 * One check, from key to decision: the plan's rules, or the key's override as this process last
 * saw it; the local deny cache; one store call that also tells whether the override changed
 * (then it is taken in and the check is sent again); a block; the decision, and the ticket a
 * later `settle` needs.
 */

import { answerLocally } from '../base/local-answers.js';
import { type CheckOptions, type Degraded, type ResolvedRule, ruleCost } from '../base/types.js';
import { checkOptions } from '../options.js';
import type { StoreCaller } from '../resilience/store-caller.js';
import { positiveInteger } from '../rules.js';
import type { RuleOutcome, Store } from '../stores/types.js';
import { type Decision, decide } from './decision.js';
import type { DenyCache } from './deny-cache.js';
import { createHeadCache } from './head-cache.js';
import { type Leases, RETRY, TAKE } from './leases.js';
import { blockedDecision, type KnownOverride, learnOverride, type OverrideCache } from './overrides.js';
import { type Plans, type RuleSet, storedRulesWith } from './plans.js';
import type { Ticket, Tickets } from './settle.js';
import { announceCrossings, type ThresholdEvent } from './thresholds.js';

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T>)?.then === 'function';
}

export interface CheckContext {
  readonly prefix: string;
  readonly plans: Plans;
  readonly caller: StoreCaller;
  /** The limiter's store: in-process stores are called directly when no override is known. */
  readonly store: Store;
  readonly denyCache: DenyCache | undefined;
  readonly overrides: OverrideCache;
  readonly tickets: Tickets;
  /** Told of every admitted check whose rules hold slots, so `close` can release them. */
  readonly holding: (ticket: Ticket) => void;
  readonly clock: () => number;
  /** Whether `onStoreError` is a fallback store (then reservations made there can be settled). */
  readonly fallbackStore: boolean;
  readonly invalidOverride: (info: { key: string; value: string; cause: unknown }) => void;
  /** Quota slices of hot keys (`quotaLease`), when the store can lease. */
  readonly leases: Leases | undefined;
  /** Told of every check's decision, once (`cached`: the deny cache answered it); peeks are not told. */
  readonly decided: ((key: string, decision: Decision, cached: boolean) => void) | undefined;
  /** Told of each threshold a consumed check crossed (see thresholds.ts). */
  readonly crossed: (event: ThresholdEvent) => void;
}

export interface Checks {
  /** The key's head (see base/key-encoding.ts); throws a TypeError for a key that is not a non-empty string. */
  head(key: unknown): string;
  evaluate(key: string, options: CheckOptions | undefined, consume: boolean): Promise<Decision>;
  /** Drops this process's cached denials of a key, under every plan. */
  forgetDenials(keyHeadValue: string): void;
  /** Every stored rule of a key: all plans', and its override's if this process knows one. */
  storedRules(keyHeadValue: string): readonly ResolvedRule[];
}

const MAX_COST = Number.MAX_SAFE_INTEGER;
/** Checks sent with the override this process knows before deciding without comparing it. */
const OVERRIDE_ATTEMPTS = 2;
const NO_RULES: readonly ResolvedRule[] = Object.freeze([]);

const CHECK_OPTIONS = new Set(['cost', 'plan']);

/** Validates check options: a misspelt option would otherwise silently charge 1 or pick no plan. */
function costOf(options: CheckOptions | undefined): number {
  if (options === undefined) return 1;
  checkOptions(options, { owner: 'check options', expected: '{ cost?, plan? }', known: CHECK_OPTIONS });
  return options.cost === undefined ? 1 : positiveInteger(options.cost, 'cost', MAX_COST);
}

/** Denials are cached per plan: one key may be checked under several. */
function denyKey(keyHeadValue: string, plan: string | undefined): string {
  return plan === undefined ? keyHeadValue : `${keyHeadValue}|${plan}`;
}

export function createChecks(context: CheckContext): Checks {
  const {
    prefix,
    plans,
    caller,
    store,
    denyCache,
    overrides,
    tickets,
    holding,
    clock,
    fallbackStore,
    leases,
    decided,
    crossed,
  } = context;
  const local = store.inProcess;
  const cachedHead = createHeadCache(prefix, local?.maxKeys);

  /** The decision for a store's outcomes, with the ticket a later settle (or release) needs. */
  function conclude(
    key: string,
    keyHeadValue: string,
    rules: readonly ResolvedRule[],
    outcomes: readonly RuleOutcome[],
    cost: number,
    degraded: Degraded,
    set: RuleSet,
    consume: boolean,
  ): Decision {
    const decision = decide(rules, outcomes, cost, degraded, set.plan, consume);
    if (consume && decided !== undefined) decided(key, decision, false);
    if (consume && decision.allowed) {
      if (set.thresholds) announceCrossings(key, rules, outcomes, (rule) => ruleCost(rule, cost), crossed);
      const where = degraded === false ? 'store' : fallbackStore ? 'fallback' : undefined;
      // A shadow rule that would have denied consumed nothing: its settle has nothing to adjust.
      const kept =
        decision.shadowDenied.length === 0 ? undefined : outcomes.map((outcome) => outcome.allowed);
      const ticket =
        kept === undefined
          ? tickets.issue(decision, keyHeadValue, rules, cost, outcomes, where)
          : tickets.issue(
              decision,
              keyHeadValue,
              rules.filter((_, i) => kept[i]),
              cost,
              outcomes.filter((_, i) => kept[i]),
              where,
            );
      if (set.holdsSlots && where !== undefined) holding(ticket);
    }
    return decision;
  }

  /**
   * One check, its key, cost and plan validated once. An in-process store with no override known
   * here decides synchronously, without a promise or closure of our own; anything else (or a store
   * that reports an override after all, having evaluated nothing) takes the general path.
   */
  function evaluate(key: string, options: CheckOptions | undefined, consume: boolean): Promise<Decision> {
    try {
      const cost = costOf(options);
      const cached = cachedHead(key);
      const keyHeadValue = cached.head;
      const planned = plans.select(options?.plan);
      // Decided once per rule set: a set without quotaLease pays only this test.
      if (
        planned.leased &&
        consume &&
        leases !== undefined &&
        (overrides.size === 0 || overrides.get(keyHeadValue) === undefined)
      ) {
        return evaluateLeased(key, keyHeadValue, cost, planned, leases);
      }
      if (store.local !== true || (overrides.size > 0 && overrides.get(keyHeadValue) !== undefined)) {
        return evaluateThroughCaller(key, keyHeadValue, cost, planned, consume);
      }
      const { rules } = planned;
      if (local !== undefined) {
        const outcomes = local.evaluate(cached, rules, cost, consume);
        if ('overrideChanged' in outcomes)
          return evaluateThroughCaller(key, keyHeadValue, cost, planned, consume);
        return Promise.resolve(conclude(key, keyHeadValue, rules, outcomes, cost, false, planned, consume));
      }
      const reply = store.evaluate(keyHeadValue, rules, cost, consume, '');
      if (isPromise(reply)) {
        return reply.then((settled) =>
          'overrideChanged' in settled
            ? evaluateThroughCaller(key, keyHeadValue, cost, planned, consume)
            : conclude(key, keyHeadValue, rules, settled.outcomes, cost, false, planned, consume),
        );
      }
      if ('overrideChanged' in reply) return evaluateThroughCaller(key, keyHeadValue, cost, planned, consume);
      return Promise.resolve(
        conclude(key, keyHeadValue, rules, reply.outcomes, cost, false, planned, consume),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * A check of a leased rule set on a key with no override known: from this process's slice when
   * it holds one, else by taking one (a denied take is cached as any denial), else the general path.
   */
  function evaluateLeased(
    key: string,
    keyHeadValue: string,
    cost: number,
    set: RuleSet,
    leased: Leases,
  ): Promise<Decision> {
    const answer = leased.local(keyHeadValue, set, cost);
    if (answer === undefined) return evaluateThroughCaller(key, keyHeadValue, cost, set, true);
    if (answer !== TAKE)
      return Promise.resolve(conclude(key, keyHeadValue, set.rules, answer, cost, false, set, true));
    return takeLeased(key, keyHeadValue, cost, set, leased);
  }

  async function takeLeased(
    key: string,
    keyHeadValue: string,
    cost: number,
    set: RuleSet,
    leased: Leases,
  ): Promise<Decision> {
    const cacheKey = denyKey(keyHeadValue, set.plan);
    if (denyCache !== undefined && cost <= set.smallestCapacity) {
      const cached = denyCache.get(cacheKey, cost, clock());
      if (cached !== undefined) {
        decided?.(key, cached, true);
        return cached;
      }
    }
    const taken = await leased.take(keyHeadValue, set, cost);
    if (taken === undefined) return evaluateThroughCaller(key, keyHeadValue, cost, set, true);
    // Another check's take landed meanwhile: look at the slice again.
    if (taken === RETRY) return evaluateLeased(key, keyHeadValue, cost, set, leased);
    const decision = conclude(key, keyHeadValue, set.rules, taken, cost, false, set, true);
    if (denyCache !== undefined && !decision.allowed) denyCache.remember(cacheKey, cost, decision, clock());
    return decision;
  }

  /**
   * The general path: overrides, the deny cache, and the store within its deadline and breaker.
   * `key` is already validated into `keyHeadValue`, `cost` and `planned`. A chain of callbacks
   * rather than an async function: this runs once per check, and each async layer costs a promise.
   */
  function evaluateThroughCaller(
    key: string,
    keyHeadValue: string,
    cost: number,
    planned: RuleSet,
    consume: boolean,
  ): Promise<Decision> {
    // Most keys have no override: with none known, spare the lookup (and its string hash).
    let known = overrides.size === 0 ? undefined : overrides.get(keyHeadValue);
    // Past its expiry as last reported: ask the store afresh (it answers "changed" if it still has one).
    if (known?.expiresAt !== undefined && known.expiresAt <= clock()) {
      overrides.delete(keyHeadValue);
      known = undefined;
    }
    return attemptWith(key, keyHeadValue, cost, planned, consume, known, 1);
  }

  /** One store call with the override `known` here; sent again with the override the store reports instead. */
  function attemptWith(
    key: string,
    keyHeadValue: string,
    cost: number,
    planned: RuleSet,
    consume: boolean,
    known: KnownOverride | undefined,
    attempt: number,
  ): Promise<Decision> {
    // Past the attempts (the override changed again meanwhile), decide with the latest one seen.
    const seen = attempt <= OVERRIDE_ATTEMPTS ? (known?.value ?? '') : undefined;
    const set = known?.set ?? planned;
    const rules = known?.block === true ? NO_RULES : set.rules;
    // Keys with an override skip the deny cache, so clearing a block is seen at once; so do
    // slot rules, whose slots usually come back (released) long before their retry time.
    const cacheKey = known === undefined && !set.holdsSlots ? denyKey(keyHeadValue, set.plan) : undefined;
    // A cost above some rule's capacity is never cached: its true answer is "never", not "later".
    // Rules that all count requests take 1 whatever the cost: one denial covers every cost.
    const cacheCost = set.countsCost ? cost : 1;
    if (denyCache !== undefined && cacheKey !== undefined && cost <= set.smallestCapacity) {
      const cached = denyCache.get(cacheKey, cacheCost, clock());
      if (cached !== undefined) {
        if (consume) decided?.(key, cached, true);
        return Promise.resolve(answerLocally(cached));
      }
    }
    return caller.call(keyHeadValue, rules, cost, consume, seen).then(({ reply, degraded }) => {
      if ('overrideChanged' in reply) {
        const value = reply.value;
        const learnt = learnOverride(overrides, plans, keyHeadValue, value, (cause) =>
          context.invalidOverride({ key, value: value as string, cause }),
        );
        return attemptWith(key, keyHeadValue, cost, planned, consume, learnt, attempt + 1);
      }
      if (known !== undefined && seen !== undefined && degraded === false) {
        const ttl = reply.overrideTtlMs ?? Number.POSITIVE_INFINITY;
        known.expiresAt = ttl === Number.POSITIVE_INFINITY ? undefined : clock() + ttl;
      }
      if (known?.block === true) {
        const blocked = blockedDecision(known, degraded, clock());
        if (consume) decided?.(key, blocked, false);
        return blocked;
      }
      const decision = conclude(key, keyHeadValue, rules, reply.outcomes, cost, degraded, set, consume);
      if (denyCache !== undefined && cacheKey !== undefined && !decision.allowed && degraded === false) {
        denyCache.remember(cacheKey, cacheCost, decision, clock());
      }
      return decision;
    });
  }

  return {
    head: (key) => cachedHead(key).head,
    evaluate,
    forgetDenials(keyHeadValue) {
      denyCache?.forget(keyHeadValue);
      for (const plan of plans.names) denyCache?.forget(denyKey(keyHeadValue, plan));
    },
    storedRules: (keyHeadValue) => storedRulesWith(plans, overrides.get(keyHeadValue)?.set?.rules ?? []),
  };
}
