/**
 * createLimiter: options in, resolved configuration out, then every check is
 * key → plan's rules (or the key's override) → (deny cache) → store, within a deadline and behind
 * a circuit breaker → decision. Validation happens here, once; the hot path trusts it.
 */
import { EventEmitter } from 'node:events';
import type { AlgorithmName } from './algorithms/index.js';
import { type Decision, decide, RAW_FIELDS } from './decision.js';
import { type Duration, describe, parseDuration } from './duration.js';
import { keyHead, resolvePrefix } from './keys.js';
import {
  createOverrideAdmin,
  createOverrideCache,
  type KnownOverride,
  type Override,
  type OverrideEntry,
  type OverrideOptions,
  resolveOverride,
} from './overrides.js';
import { resolvePlans } from './plans.js';
import { createCircuitBreaker } from './resilience/breaker.js';
import { createDenyCache, type DenyCache } from './resilience/deny-cache.js';
import { createStoreCaller, type Degraded, type StoreErrorPolicy } from './resilience/store-caller.js';
import { positiveInteger, type ResolvedRule, type RuleOptions } from './rules.js';
import { actualCost, createTickets } from './settle.js';
import { memoryStore } from './stores/memory.js';
import type { Store } from './stores/types.js';

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
   * Longest wait for the store on one check (ms or a duration string), default `'100ms'`. Past it
   * the check is answered by `onStoreError` and flagged `degraded: 'timeout'`. Not applied to the
   * memory store, which answers in-process.
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
}

export interface CheckOptions {
  /** Units this request takes: a positive integer, default 1 (e.g. LLM tokens, or an estimate to `settle` later). */
  cost?: number;
  /** With `plans`: the plan whose rules apply (default `defaultPlan`). An unknown plan throws. */
  plan?: string;
}

/** A rule as the limiter resolved it, for adapters (headers) and operators. */
export interface RuleInfo {
  readonly name: string;
  readonly algorithm: AlgorithmName;
  readonly limit: number;
  readonly windowMs: number;
  /** `burst` for token-bucket and gcra, otherwise `limit`. */
  readonly capacity: number;
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
   * or charges `actual − reserved` on every rule, atomically (see docs/tenants.md per algorithm).
   * A denied decision is a no-op; settling a decision twice, or one this limiter did not return
   * from `check`, throws. A store failure is reported as `storeError`, never thrown.
   */
  settle(decision: Decision, actualCost: number): Promise<void>;
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
  on<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): this;
  off<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): this;
}

const LIMITER_OPTIONS = new Set([
  'rules',
  'plans',
  'defaultPlan',
  'store',
  'prefix',
  'timeout',
  'onStoreError',
  'breaker',
  'denyCache',
]);
const MAX_COST = Number.MAX_SAFE_INTEGER;
/** Overrides remembered per process; a key past it costs one extra round trip on its next check. */
const OVERRIDE_CACHE_KEYS = 10_000;
/** Checks sent with the override this process knows before deciding without comparing it. */
const OVERRIDE_ATTEMPTS = 2;
const NO_RULES: readonly ResolvedRule[] = Object.freeze([]);

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
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`createLimiter: expected an options object with rules, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!LIMITER_OPTIONS.has(key)) {
      throw new TypeError(
        `createLimiter: unknown option '${key}'; the options are ${[...LIMITER_OPTIONS].join(', ')}`,
      );
    }
  }
  const plans = resolvePlans(options.rules, options.plans, options.defaultPlan);
  const prefix = resolvePrefix(options.prefix);
  const store = resolveStore(options.store ?? memoryStore(), 'store');
  const timeoutMs = parseDuration(options.timeout ?? '100ms', 'timeout');
  const policy = resolvePolicy(options.onStoreError);
  const breaker = resolveBreaker(options.breaker);
  // An in-process store answers as fast as the cache would: caching its denials gains nothing.
  const configuredDenyCache = resolveDenyCache(options.denyCache);
  const denyCache = store.local === true ? undefined : configuredDenyCache;

  // Local waits are measured on the store's injected clock when it has one (simulations, tests).
  const clock = store.clock ?? Date.now;
  const emitter = new EventEmitter();
  const overrides = createOverrideCache(OVERRIDE_CACHE_KEYS);
  const admin = createOverrideAdmin({ store, prefix, plans: plans.names });
  const tickets = createTickets();
  const caller = createStoreCaller(
    store,
    timeoutMs,
    policy,
    breaker,
    {
      degraded: (reason, cause) => emitter.emit('degraded', { reason, cause }),
      recovered: () => emitter.emit('recovered'),
      storeError: (cause) => emitter.emit('storeError', cause),
    },
    clock,
  );

  function head(key: unknown): string {
    if (typeof key !== 'string' || key.length === 0) {
      throw new TypeError(`key: expected a non-empty string, got ${describe(key)}`);
    }
    return keyHead(prefix, key);
  }

  /** Denials are cached per plan: one key may be checked under several. */
  function denyKey(keyHeadValue: string, plan: string | undefined): string {
    return plan === undefined ? keyHeadValue : `${keyHeadValue}|${plan}`;
  }

  function forgetDenials(keyHeadValue: string): void {
    denyCache?.forget(keyHeadValue);
    for (const plan of plans.names) denyCache?.forget(denyKey(keyHeadValue, plan));
  }

  /** Takes in an override the store says `key` now has (undefined: none). */
  function learn(key: string, keyHeadValue: string, value: string | undefined): KnownOverride | undefined {
    if (value === undefined) {
      overrides.delete(keyHeadValue);
      return undefined;
    }
    let known: KnownOverride;
    try {
      known = resolveOverride(value, plans);
    } catch (cause) {
      emitter.emit('invalidOverride', { key, value, cause });
      known = { value, block: false, set: undefined, expiresAt: undefined };
    }
    overrides.set(keyHeadValue, known);
    return known;
  }

  async function evaluate(
    key: string,
    options: CheckOptions | undefined,
    consume: boolean,
  ): Promise<Decision> {
    const cost = options?.cost === undefined ? 1 : positiveInteger(options.cost, 'cost', MAX_COST);
    const keyHeadValue = head(key);
    const planned = plans.select(options?.plan);
    let known = overrides.get(keyHeadValue);
    for (let attempt = 1; ; attempt++) {
      // Past the attempts (the override changed again meanwhile), decide with the latest one seen.
      const seen = attempt <= OVERRIDE_ATTEMPTS ? (known?.value ?? '') : undefined;
      const set = known?.set ?? planned;
      const rules = known?.block === true ? NO_RULES : set.rules;
      // Keys with an override skip the deny cache, so clearing a block is seen at once.
      const cacheKey = known === undefined ? denyKey(keyHeadValue, set.plan) : undefined;
      // A cost above some rule's capacity is never cached: its true answer is "never", not "later".
      if (denyCache !== undefined && cacheKey !== undefined && cost <= set.smallestCapacity) {
        const cached = denyCache.get(cacheKey, cost, clock());
        if (cached !== undefined) return cached;
      }
      const { raw, degraded } = await caller.call(keyHeadValue, rules, cost, consume, seen);
      if ('overrideChanged' in raw) {
        known = learn(key, keyHeadValue, raw.value);
        continue;
      }
      if (known !== undefined && seen !== undefined && degraded === false) {
        const remaining = raw[rules.length * RAW_FIELDS] as number;
        known.expiresAt = remaining < 0 ? undefined : clock() + remaining;
      }
      if (known?.block === true) return blocked(known, degraded);
      const decision = decide(rules, raw, cost, degraded, set.plan);
      if (consume && decision.allowed) {
        const tokens = rules.map((_, i) => raw[i * RAW_FIELDS + 5] as number);
        const where = degraded === false ? 'store' : typeof policy === 'object' ? 'fallback' : undefined;
        tickets.issue(decision, { head: keyHeadValue, rules, reserved: cost, tokens, where, settled: false });
      }
      if (denyCache !== undefined && cacheKey !== undefined && !decision.allowed && degraded === false) {
        denyCache.remember(cacheKey, cost, decision, clock());
      }
      return decision;
    }
  }

  /** A blocked key's decision: denied until the block expires (Infinity: until cleared). */
  function blocked(known: KnownOverride, degraded: Degraded): Decision {
    const left = known.expiresAt === undefined ? undefined : Math.max(1, known.expiresAt - clock());
    const view = {
      rule: 'override.block',
      allowed: false,
      limit: 0,
      windowMs: left ?? 0,
      remaining: 0,
      resetMs: left ?? 0,
      retryAfterMs: left ?? Number.POSITIVE_INFINITY,
    };
    return { ...view, rules: [view], degraded };
  }

  /** Every stored rule of `key`: all plans', and its override's if this process knows one. */
  function storedRules(keyHeadValue: string): readonly ResolvedRule[] {
    const extra = overrides.get(keyHeadValue)?.set?.rules ?? [];
    const missing = extra.filter((rule) => !plans.stored.some((other) => other.keyTail === rule.keyTail));
    return missing.length === 0 ? plans.stored : [...plans.stored, ...missing];
  }

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
      return evaluate(key, options, true);
    },
    peek: function peek(key, options) {
      return evaluate(key, options, false);
    },
    settle: async function settle(decision, actual) {
      const units = actualCost(actual);
      // A denial reserved nothing.
      if ((decision as Decision | null)?.allowed === false) return;
      const ticket = tickets.take(decision);
      if (ticket.where === undefined || units === ticket.reserved) return;
      const { head: keyHeadValue, rules, reserved, tokens, where } = ticket;
      const applied = await caller.settle(where, keyHeadValue, rules, reserved, units, tokens);
      // A refund can make room for a request a cached denial would turn away.
      if (applied && units < reserved) forgetDenials(keyHeadValue);
    },
    reset: async function reset(key) {
      const keyHeadValue = head(key);
      forgetDenials(keyHeadValue);
      const rules = storedRules(keyHeadValue);
      await store.reset(keyHeadValue, rules);
      if (typeof policy === 'object') await policy.reset(keyHeadValue, rules);
    },
    setOverride: async function setOverride(key, override, overrideOptions) {
      const keyHeadValue = head(key);
      await admin.set(key, override, overrideOptions);
      overrides.delete(keyHeadValue);
      forgetDenials(keyHeadValue);
    },
    clearOverride: async function clearOverride(key) {
      const keyHeadValue = head(key);
      await admin.clear(key);
      overrides.delete(keyHeadValue);
      forgetDenials(keyHeadValue);
    },
    listOverrides: function listOverrides() {
      return admin.list();
    },
    on(event, listener) {
      emitter.on(event, listener as (...args: unknown[]) => void);
      return this;
    },
    off(event, listener) {
      emitter.off(event, listener as (...args: unknown[]) => void);
      return this;
    },
  };
  return limiter;
}

function resolveStore(store: unknown, option: string): Store {
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
  return createCircuitBreaker(failures, cooldownMs);
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
  });
}
