/**
 * createLimiter: options in, resolved configuration out, then every check is
 * key → (deny cache) → store, within a deadline and behind a circuit breaker → decision.
 * Validation happens here, once; the hot path trusts it.
 */
import { EventEmitter } from 'node:events';
import type { AlgorithmName } from './algorithms/index.js';
import { type Decision, decide } from './decision.js';
import { type Duration, describe, parseDuration } from './duration.js';
import { keyHead } from './keys.js';
import { createCircuitBreaker } from './resilience/breaker.js';
import { createDenyCache, type DenyCache } from './resilience/deny-cache.js';
import { createStoreCaller, type Degraded, type StoreErrorPolicy } from './resilience/store-caller.js';
import { positiveInteger, type ResolvedRule, type RuleOptions, resolveRules } from './rules.js';
import { memoryStore } from './stores/memory.js';
import type { Store } from './stores/types.js';

export interface LimiterOptions {
  /** One rule or several; a request must pass every rule, and is consumed from all or none. */
  rules: RuleOptions | readonly RuleOptions[];
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
  /** Units this request takes: a positive integer, default 1 (e.g. LLM tokens). */
  cost?: number;
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
}

export interface Limiter {
  readonly prefix: string;
  readonly store: Store;
  readonly rules: readonly RuleInfo[];
  /** Checks `key` and consumes `cost` from every rule when all of them allow it. */
  check(key: string, options?: CheckOptions): Promise<Decision>;
  /** The answer `check` would give now, without consuming anything. */
  peek(key: string, options?: CheckOptions): Promise<Decision>;
  /** Forgets all state of `key` under this limiter's rules. */
  reset(key: string): Promise<void>;
  on<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): this;
  off<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): this;
}

const LIMITER_OPTIONS = new Set([
  'rules',
  'store',
  'prefix',
  'timeout',
  'onStoreError',
  'breaker',
  'denyCache',
]);
const PREFIX = /^[A-Za-z0-9_.:@/+=~-]{1,64}$/;
const MAX_COST = Number.MAX_SAFE_INTEGER;

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
  const rules = resolveRules(options.rules);
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
  const smallestCapacity = Math.min(...rules.map((rule) => rule.capacity));
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

  /** The remote path: deny cache, then the store within its deadline and breaker. */
  async function evaluateRemote(keyHeadValue: string, cost: number, consume: boolean): Promise<Decision> {
    // A cost above some rule's capacity is never cached: its true answer is "never", not "later".
    if (denyCache !== undefined && cost <= smallestCapacity) {
      const cached = denyCache.get(keyHeadValue, cost, clock());
      if (cached !== undefined) return cached;
    }
    const { raw, degraded } = await caller.call(keyHeadValue, rules, cost, consume);
    const decision = decide(rules, raw, cost, degraded);
    if (denyCache !== undefined && !decision.allowed && degraded === false) {
      denyCache.remember(keyHeadValue, cost, decision, clock());
    }
    return decision;
  }

  function costOf(options: CheckOptions | undefined): number {
    if (options === undefined) return 1;
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(`check options: expected { cost }, got ${describe(options)}`);
    }
    // A misspelt cost would otherwise silently charge 1.
    for (const key in options) {
      if (key !== 'cost')
        throw new TypeError(`check options: unknown option '${key}'; the only option is cost`);
    }
    const cost = options.cost;
    return cost === undefined ? 1 : positiveInteger(cost, 'cost', MAX_COST);
  }

  function evaluate(key: string, options: CheckOptions | undefined, consume: boolean): Promise<Decision> {
    try {
      const cost = costOf(options);
      const keyHeadValue = head(key);
      if (store.local !== true) return evaluateRemote(keyHeadValue, cost, consume);
      // In-process stores cannot hang or fail transiently: no deadline, no breaker, and no
      // promise of their own when they answer synchronously.
      const raw = store.evaluate(keyHeadValue, rules, cost, consume);
      if (isPromise(raw)) return raw.then((values) => decide(rules, values, cost));
      return Promise.resolve(decide(rules, raw, cost));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  const limiter: Limiter = {
    prefix,
    store,
    rules: rules.map(describeRule),
    check: function check(key, options) {
      return evaluate(key, options, true);
    },
    peek: function peek(key, options) {
      return evaluate(key, options, false);
    },
    reset: async function reset(key) {
      const keyHeadValue = head(key);
      denyCache?.forget(keyHeadValue);
      await store.reset(keyHeadValue, rules);
      if (typeof policy === 'object') await policy.reset(keyHeadValue, rules);
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

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T>)?.then === 'function';
}

function resolvePrefix(prefix: unknown): string {
  const value = prefix ?? 'floodgate';
  if (typeof value !== 'string' || !PREFIX.test(value)) {
    throw new RangeError(
      `prefix: ${describe(value)} must be 1-64 characters of letters, digits and _ . : @ / + = ~ - (no braces: they would become the cluster hash tag)`,
    );
  }
  return value;
}

function resolveStore(store: unknown, option: string): Store {
  if (
    typeof store !== 'object' ||
    store === null ||
    typeof (store as Store).evaluate !== 'function' ||
    typeof (store as Store).reset !== 'function'
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
