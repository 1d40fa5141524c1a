/**
 * createLimiter: options in, resolved configuration out, then every check is
 * key → plan's rules (or the key's override) → (deny cache) → store, within a deadline and behind
 * a circuit breaker → decision. Validation happens here, once; the hot path trusts it.
 */

import type { AlgorithmName } from './algorithms/index.js';
import { resolvePrefix } from './base/key-encoding.js';
import type { CheckOptions, Degraded, ResolvedRule } from './base/types.js';
import { createChecks } from './core/check.js';
import type { Decision } from './core/decision.js';
import { createDenyCache, type DenyCache } from './core/deny-cache.js';
import { createLeases, type Within } from './core/leases.js';
import {
  createOverrideAdmin,
  createOverrideCache,
  namesCalendarRule,
  type Override,
  type OverrideEntry,
  type OverrideOptions,
} from './core/overrides.js';
import { resolvePlans } from './core/plans.js';
import { actualCost, createTickets, tokensOf } from './core/settle.js';
import { createSlots } from './core/slots.js';
import { createStoreWarnings, hasCalendarRule } from './core/store-warnings.js';
import type { ThresholdEvent } from './core/thresholds.js';
import { describe } from './describe.js';
import { type Duration, parseDuration } from './duration.js';
import { createEmitter } from './emitter.js';
import { LimiterClosedError } from './errors.js';
import { createLifecycle } from './lifecycle.js';
import { checkOptions } from './options.js';
import { createCircuitBreaker } from './resilience/breaker.js';
import { createDeadlines, TIMED_OUT } from './resilience/deadline.js';
import { createStoreCaller, type StoreErrorPolicy } from './resilience/store-caller.js';
import { booleanOption, positiveInteger, type RuleCounts, type RuleOptions } from './rules.js';
import { memoryStore } from './stores/memory/store.js';
import type { Store, StoreWarning } from './stores/types.js';
import type { MeterLike } from './telemetry/meter.js';
import type { TopEntry } from './telemetry/space-saving.js';
import { createTelemetry, type TopOptions } from './telemetry/telemetry.js';
import { timedStore } from './telemetry/timed-store.js';

export interface LimiterOptions {
  /**
   * One rule or several; a request must pass every rule, and is consumed from all or none.
   * Give either `rules` or `plans`.
   */
  rules?: RuleOptions | readonly RuleOptions[];
  /**
   * Named rule sets, e.g. `{ free: [...], pro: [...] }`; each check picks one with `plan`. Rules
   * are shown as `<plan>.<rule>` in decisions and headers, and stored under `<rule>`, so a key's
   * usage carries over when its plan changes. Give either `rules` or `plans`.
   */
  plans?: Readonly<Record<string, RuleOptions | readonly RuleOptions[]>>;
  /** The plan of checks that name none. Default: none, and such checks throw. */
  defaultPlan?: string;
  /** Where state lives. Default: a new `memoryStore()` (per process). */
  store?: Store;
  /** Namespace of every key this limiter writes. Default `'floodgate'`. No braces, spaces or control characters. */
  prefix?: string;
  /**
   * Longest wait for the store on one check (ms or a duration string), default `'100ms'`, counted
   * from when the check is sent: a reply that arrived in time is used even if this process was too
   * busy to read it before the deadline. Past it the check is answered by `onStoreError` and
   * flagged `degraded: 'timeout'`. Not applied to the memory store, which answers in-process.
   */
  timeout?: Duration;
  /**
   * What a check answers when the store fails, times out or is cut off by the circuit breaker:
   * `'open'` (default: allow), `'closed'` (deny, with a wait until the next probe), or a store such
   * as `memoryStore()` that enforces the same rules locally until the store is back.
   */
  onStoreError?: StoreErrorPolicy;
  /**
   * After `failures` consecutive store failures (default 5), stop calling the store for
   * `cooldown` (default `'500ms'`), then let one probe through. `false` disables the breaker.
   */
  breaker?: { failures?: number; cooldown?: Duration } | false;
  /**
   * Answer checks of a key that is known to be denied locally until its retry time, without a
   * store call. `maxKeys` bounds it (default 10,000). `false` disables it. A `reset()` in this
   * process clears the key at once; one in another process is seen here after the cached wait.
   */
  denyCache?: { maxKeys?: number } | false;
  /**
   * Makes every rule a shadow rule (see `RuleOptions.shadow`): checks are evaluated and counted
   * but never denied, and would-be denials are named in `shadowDenied`. Default `false`.
   */
  shadow?: boolean;
  /**
   * An OpenTelemetry `Meter` (`metrics.getMeter('my-service')` from `@opentelemetry/api`) to record
   * decisions, store call durations and errors, deny cache answers, quota slices and slots
   * through (see docs/observability.md). Default: none, nothing recorded.
   */
  meter?: MeterLike;
  /**
   * Counters of the sketch behind `top()`: the keys checked and denied most in this process, in
   * memory that does not grow with the number of keys. Default 1,000; `0` turns it off.
   */
  topKeys?: number;
  /**
   * How often this process merges its heavy hitters into the store's fleet sketches, which
   * `top({ fleet: true })` and `floodgate top` read (a store that keeps them: Redis). Default
   * `'5s'`, from `'10ms'` to `'20s'`.
   */
  fleetInterval?: Duration;
}

/** A rule as the limiter resolved it, for adapters (headers) and operators. */
export interface RuleInfo {
  readonly name: string;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowMs: number;
  /** `burst` for token-bucket and gcra, otherwise `limit`. */
  readonly capacity: number;
  /** What a check takes from it: `'requests'` 1, `'cost'` the check's cost (see `RuleOptions.counts`). */
  readonly counts: RuleCounts;
}

/** Events a limiter emits, for logs and metrics. */
export interface LimiterEvents {
  /** The store stopped answering normally; decisions now follow `onStoreError`. */
  degraded: [info: { reason: Exclude<Degraded, false>; cause: unknown }];
  /** The store answers normally again. */
  recovered: [];
  /** One store failure or timeout, with its cause. */
  storeError: [cause: unknown];
  /** A key's stored override cannot apply here (malformed, or names an unknown plan): it is ignored. */
  invalidOverride: [info: { key: string; value: string; cause: unknown }];
  /**
   * A risk found at run time, once each, soon after the limiter is created: e.g. `code`
   * `'maxmemory-policy'` when Redis may evict overrides and limiter state (an `allkeys-*` policy).
   */
  warning: [info: StoreWarning];
  /**
   * A check took `key`'s usage of a calendar rule with `thresholds` to `threshold` × `limit`:
   * once per key, rule, threshold and period across every process sharing the store.
   */
  threshold: [info: ThresholdEvent];
}

export interface Limiter {
  readonly prefix: string;
  readonly store: Store;
  /** Every rule, of every plan (named `<plan>.<rule>` then). */
  readonly rules: readonly RuleInfo[];
  /** With `plans`: each plan's rules; otherwise undefined. */
  readonly plans: Readonly<Record<string, readonly RuleInfo[]>> | undefined;
  readonly defaultPlan: string | undefined;
  /** Checks `key` and consumes `cost` from every rule when all of them allow it. */
  check(key: string, options?: CheckOptions): Promise<Decision>;
  /** The answer `check` would give now, without consuming anything. */
  peek(key: string, options?: CheckOptions): Promise<Decision>;
  /**
   * Settles an allowed `check` whose real cost is known only now: gives back `reserved − actual`
   * or charges `actual − reserved` on every rule, atomically (see the README, "Reserve, then settle", per algorithm).
   * A denied decision is a no-op; settling a decision twice, or one this limiter did not return
   * from `check`, throws. A store failure is reported as `storeError`, never thrown.
   */
  settle(decision: Decision, actualCost: number): Promise<void>;
  /**
   * Gives back everything an allowed `check` took from its rules, those that count requests
   * included, as if it had never been made: for a request that should not count at all (what
   * the HTTP adapters' `skipFailedRequests` and `skipSuccessfulRequests` do). Concurrency slots
   * are given back by `release`. The same rules as `settle` otherwise: a denied decision is a
   * no-op, a decision can be settled or refunded once.
   */
  refund(decision: Decision): Promise<void>;
  /**
   * Gives back the concurrency slots an allowed `check` took, on every concurrency rule at once.
   * Idempotent: a second release frees nothing; safe after the lease ran out; a no-op for a
   * decision that took no slot (denied, fail-open, or no concurrency rule). A store failure is
   * reported as `storeError`, never thrown: the slots then come back when their lease runs out.
   * @example
   * const d = await limiter.check(tenantId);
   * if (d.allowed) {
   *   try {
   *     await work();
   *   } finally {
   *     await limiter.release(d);
   *   }
   * }
   */
  release(decision: Decision): Promise<void>;
  /**
   * Extends the leases of a decision's slots to a full `lease` from now, for work that may outlast
   * it. Resolves whether every slot was still held (false: a lease had run out, or the store
   * failed, or the decision holds none).
   */
  renew(decision: Decision): Promise<boolean>;
  /** Forgets all state of `key` under this limiter's rules (not its override). */
  reset(key: string): Promise<void>;
  /**
   * Gives `key` other rules, another plan (by name) or `{ block: true }`, in the store, so every
   * limiter on it applies it from its next check of `key`. `ttl` bounds it (default: until cleared).
   */
  setOverride(key: string, override: Override, options?: OverrideOptions): Promise<void>;
  /** Removes `key`'s override; its plan's rules apply again from the next check. */
  clearOverride(key: string): Promise<void>;
  /** Every override under this limiter's prefix (for operators). */
  listOverrides(): Promise<OverrideEntry[]>;
  /**
   * The keys this process denied (`by: 'denied'`, the default) or checked (`'checked'`) most over
   * the last 5 to 10 minutes, most first, from the `topKeys` sketch: each entry's true count is
   * between `count - error` and `count`. With `fleet: true`, the keys of every process on the
   * store (Redis), as of their last merges. Rejects when `topKeys` is 0.
   * @example
   * for (const { key, count } of await limiter.top({ limit: 5 })) console.log(key, count);
   */
  top(options?: TopOptions): Promise<TopEntry[]>;
  /**
   * Stops the limiter: every later call rejects with a `LimiterClosedError`, and the returned
   * promise resolves once the calls already under way have settled (each within `timeout`), the
   * concurrency slots its checks still hold are released, and its quota slices' unused units are
   * given back (within `timeout`). The store's Redis client is yours: close it after this.
   * @example
   * process.on('SIGTERM', async () => {
   *   await limiter.close();
   *   await redis.quit();
   * });
   */
  close(): Promise<void>;
  on<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): this;
  off<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): this;
}

export const LIMITER_OPTIONS: ReadonlySet<string> = new Set([
  'rules',
  'plans',
  'defaultPlan',
  'store',
  'prefix',
  'timeout',
  'onStoreError',
  'breaker',
  'denyCache',
  'shadow',
  'meter',
  'topKeys',
  'fleetInterval',
]);
/** Overrides remembered per process; a key past it costs one extra round trip on its next check. */
const OVERRIDE_CACHE_KEYS = 10_000;

/**
 * Creates a limiter.
 * @example
 * const limiter = createLimiter({
 *   rules: [
 *     { name: 'burst', algorithm: 'token-bucket', limit: 10, window: '1s', burst: 20 },
 *     { name: 'minute', algorithm: 'sliding-window', limit: 120, window: '1m' },
 *   ],
 * });
 * const decision = await limiter.check('org_9921');
 * if (!decision.allowed) console.log(`retry in ${decision.retryAfterMs} ms`);
 *
 * const tenants = createLimiter({
 *   plans: { free: { algorithm: 'gcra', limit: 10, window: '1s' }, pro: { algorithm: 'gcra', limit: 100, window: '1s' } },
 *   defaultPlan: 'free',
 * });
 * await tenants.check('org_9921', { plan: 'pro' });
 */
export function createLimiter(options: LimiterOptions): Limiter {
  checkOptions(options, {
    owner: 'createLimiter',
    expected: 'an options object with rules',
    known: LIMITER_OPTIONS,
  });
  const plans = resolvePlans(
    options.rules,
    options.plans,
    options.defaultPlan,
    booleanOption(options.shadow, 'shadow'),
  );
  const prefix = resolvePrefix(options.prefix);
  const store = resolveStore(options.store ?? memoryStore(), 'store');
  const timeoutMs = parseDuration(options.timeout ?? '100ms', 'timeout');
  const policy = resolvePolicy(options.onStoreError);
  if (plans.sets.some((set) => set.holdsSlots)) {
    requireSlots(store, 'store');
    if (typeof policy === 'object') requireSlots(policy, 'onStoreError');
  }
  const breaker = resolveBreaker(options.breaker);
  // An in-process store answers as fast as the cache would: caching its denials gains nothing.
  const configuredDenyCache = resolveDenyCache(options.denyCache);
  const denyCache = store.local === true ? undefined : configuredDenyCache;

  // Local waits are measured on the store's injected clock when it has one (simulations, tests).
  const clock = store.clock ?? Date.now;
  const emitter = createEmitter<LimiterEvents>();
  const lifecycle = createLifecycle();
  const storeWarnings = createStoreWarnings(
    store,
    (warning) => emitter.emit('warning', warning),
    () => lifecycle.closed,
  );
  const overrides = createOverrideCache(OVERRIDE_CACHE_KEYS, (known) => {
    if (known.set !== undefined && hasCalendarRule(known.set.rules)) storeWarnings.calendarRules();
  });
  const admin = createOverrideAdmin({ store, prefix, plans: plans.names });
  const tickets = createTickets();
  const slotRules = plans.sets.flatMap((set) =>
    set.rules.filter((rule) => rule.algorithm.slots !== undefined).map((rule) => rule.name),
  );
  const telemetry = createTelemetry({
    meter: options.meter,
    topKeys: options.topKeys,
    fleetInterval: options.fleetInterval,
    prefix,
    clock,
    sketches: store.sketches,
    timeoutMs,
    failed: (cause) => storeFailed(cause),
    // Read at collection time, when `slots` below exists.
    slots: slotRules.length === 0 ? undefined : { rules: slotRules, inUse: (visit) => slots.inUse(visit) },
  });
  const { metrics } = telemetry;
  // Calls that wait on I/O are timed; an in-process store's answer is part of the check itself.
  const called = metrics !== undefined && store.local !== true ? timedStore(store, metrics.storeCall) : store;
  const storeFailed = (cause: unknown) => {
    metrics?.storeError(cause);
    emitter.emit('storeError', cause);
  };
  const caller = createStoreCaller(
    called,
    timeoutMs,
    policy,
    breaker,
    {
      degraded: (reason, cause) => emitter.emit('degraded', { reason, cause }),
      recovered: () => emitter.emit('recovered'),
      storeError: storeFailed,
    },
    clock,
  );

  const slots = createSlots(tickets, caller, clock);
  // The memory store is one process's own: a slice of it would gain nothing, so it never leases.
  const leases = plans.sets.some((set) => set.leased)
    ? createLeases(called, withinDeadline(timeoutMs), storeFailed, metrics?.sliced)
    : undefined;
  const checks = createChecks({
    prefix,
    plans,
    caller,
    store: called,
    denyCache,
    overrides,
    tickets,
    holding: slots.holding,
    clock,
    fallbackStore: typeof policy === 'object',
    invalidOverride: (info) => emitter.emit('invalidOverride', info),
    leases,
    decided: telemetry.decided,
    crossed: (event) => emitter.emit('threshold', event),
  });
  const { head, forgetDenials } = checks;
  // After this turn, so listeners attached right after createLimiter hear it.
  storeWarnings.inspect(plans.sets.some((set) => hasCalendarRule(set.rules)));
  // An in-process store answers within the turn: only checks that wait on I/O are counted.
  const evaluate =
    store.local === true
      ? (operation: string, key: string, options: CheckOptions | undefined, consume: boolean) =>
          lifecycle.closed
            ? Promise.reject(new LimiterClosedError(operation))
            : checks.evaluate(key, options, consume)
      : (operation: string, key: string, options: CheckOptions | undefined, consume: boolean) =>
          lifecycle.run(operation, () => checks.evaluate(key, options, consume));

  const limiter: Limiter = {
    prefix,
    store,
    rules: plans.sets.flatMap((set) => set.rules.map(describeRule)),
    plans:
      plans.names.length === 0
        ? undefined
        : Object.fromEntries(plans.sets.map((set) => [set.plan, set.rules.map(describeRule)])),
    defaultPlan: plans.defaultPlan,
    check: function check(key, options) {
      return evaluate('check', key, options, true);
    },
    peek: function peek(key, options) {
      return evaluate('peek', key, options, false);
    },
    settle: function settle(decision, actual) {
      return lifecycle.run('settle', () => settleDecision(decision, actual, false));
    },
    refund: function refund(decision) {
      return lifecycle.run('refund', () => settleDecision(decision, 0, true));
    },
    release: function release(decision) {
      return lifecycle.run('release', () => slots.release(decision));
    },
    renew: function renew(decision) {
      return lifecycle.run('renew', () => slots.renew(decision));
    },
    reset: function reset(key) {
      return lifecycle.run('reset', () => resetKey(key));
    },
    setOverride: function setOverride(key, override, overrideOptions) {
      return lifecycle.run('setOverride', () => storeOverride(key, override, overrideOptions));
    },
    clearOverride: function clearOverride(key) {
      return lifecycle.run('clearOverride', () => removeOverride(key));
    },
    listOverrides: function listOverrides() {
      return lifecycle.run('listOverrides', () => admin.list());
    },
    top: function top(topOptions) {
      return lifecycle.run('top', async () => telemetry.top(topOptions));
    },
    close: async function close() {
      await lifecycle.close();
      await Promise.all([slots.releaseAll(), leases?.close(), telemetry.close()]);
      metrics?.close();
    },
    on(event, listener) {
      emitter.on(event, listener);
      return this;
    },
    off(event, listener) {
      emitter.off(event, listener);
      return this;
    },
  };

  /** Settles a decision to `actual`; a `refund` (actual 0) gives back the rules that count requests too. */
  async function settleDecision(decision: Decision, actual: number, refund: boolean): Promise<void> {
    const units = actualCost(actual);
    // A denial reserved nothing.
    if ((decision as Decision | null)?.allowed === false) return;
    const ticket = tickets.take(decision);
    if (ticket.where === undefined) return;
    const { head: keyHeadValue, rules, reserved, where } = ticket;
    // Rules that count requests took 1 whatever the cost: a settle leaves them, a refund does not.
    const counted = refund
      ? rules.some((rule) => rule.algorithm.slots === undefined)
      : units !== reserved && rules.some((rule) => rule.counts === 'cost');
    if (!counted) return;
    const applied = await caller.settle(
      where,
      keyHeadValue,
      rules,
      reserved,
      units,
      tokensOf(ticket),
      refund,
    );
    // A refund can make room for a request a cached denial would turn away.
    if (applied && (refund || units < reserved)) forgetDenials(keyHeadValue);
  }

  async function resetKey(key: string): Promise<void> {
    const keyHeadValue = head(key);
    forgetDenials(keyHeadValue);
    leases?.forget(keyHeadValue);
    const rules = checks.storedRules(keyHeadValue);
    await called.reset(keyHeadValue, rules);
    if (typeof policy === 'object') await policy.reset(keyHeadValue, rules);
  }

  async function storeOverride(key: string, override: Override, overrideOptions?: OverrideOptions) {
    const keyHeadValue = head(key);
    await admin.set(key, override, overrideOptions);
    if (namesCalendarRule(override)) storeWarnings.calendarRules();
    leases?.giveBack(keyHeadValue);
    overrides.delete(keyHeadValue);
    forgetDenials(keyHeadValue);
  }

  async function removeOverride(key: string): Promise<void> {
    const keyHeadValue = head(key);
    await admin.clear(key);
    overrides.delete(keyHeadValue);
    forgetDenials(keyHeadValue);
  }
  return limiter;
}

/** A slice's take within the limiter's deadline (see core/leases.ts): undefined once it passed. */
function withinDeadline(timeoutMs: number): Within {
  const deadlines = createDeadlines(timeoutMs);
  return (work) => deadlines.within(work).then((reply) => (reply === TIMED_OUT ? undefined : reply));
}

/** Validates a store option (`store`, a fallback store): it must implement the Store contract. */
export function resolveStore(store: unknown, option: string): Store {
  if (
    typeof store !== 'object' ||
    store === null ||
    typeof (store as Store).evaluate !== 'function' ||
    typeof (store as Store).reset !== 'function' ||
    typeof (store as Store).settle !== 'function'
  ) {
    throw new TypeError(
      `${option}: expected memoryStore(), redisStore({ client }) or another Store, got ${describe(store)}`,
    );
  }
  return store as Store;
}

/** Concurrency rules hold slots, which only a store with `slots` can give back. */
function requireSlots(store: Store, option: string): void {
  if (typeof store.slots !== 'function') {
    throw new TypeError(
      `${option}: a '${store.kind}' store cannot hold 'concurrency' slots (it has no slots()); use memoryStore() or redisStore({ client })`,
    );
  }
}

function resolvePolicy(policy: unknown): StoreErrorPolicy {
  if (policy === undefined || policy === 'open' || policy === 'closed') return policy ?? 'open';
  if (typeof policy === 'object' && policy !== null) return resolveStore(policy, 'onStoreError');
  throw new RangeError(
    `onStoreError: ${describe(policy)} must be 'open', 'closed' or a fallback store such as memoryStore()`,
  );
}

function resolveBreaker(breaker: LimiterOptions['breaker']) {
  if (breaker === false) return undefined;
  if (breaker !== undefined && (typeof breaker !== 'object' || breaker === null)) {
    throw new TypeError(`breaker: expected { failures?, cooldown? } or false, got ${describe(breaker)}`);
  }
  const failures = positiveInteger(breaker?.failures ?? 5, 'breaker.failures', 1_000_000);
  const cooldownMs = parseDuration(breaker?.cooldown ?? '500ms', 'breaker.cooldown');
  return () => createCircuitBreaker(failures, cooldownMs);
}

function resolveDenyCache(option: LimiterOptions['denyCache']): DenyCache | undefined {
  if (option === false) return undefined;
  if (option !== undefined && (typeof option !== 'object' || option === null)) {
    throw new TypeError(`denyCache: expected { maxKeys? } or false, got ${describe(option)}`);
  }
  return createDenyCache(positiveInteger(option?.maxKeys ?? 10_000, 'denyCache.maxKeys', 10_000_000));
}

function describeRule(rule: ResolvedRule): RuleInfo {
  return Object.freeze({
    name: rule.name,
    algorithm: rule.algorithm.name,
    limit: rule.limit,
    windowMs: rule.windowMs,
    capacity: rule.capacity,
    counts: rule.counts,
  });
}
