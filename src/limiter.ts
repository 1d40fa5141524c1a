/**
 * createLimiter: options in, resolved configuration out, then every check is
 * key → store → decision. Validation happens here, once; the hot path trusts it.
 */
import type { AlgorithmName } from './algorithms/index.js';
import { type Decision, decide } from './decision.js';
import { describe } from './duration.js';
import { keyHead } from './keys.js';
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
}

const LIMITER_OPTIONS = new Set(['rules', 'store', 'prefix']);
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
  const prefix = options.prefix ?? 'floodgate';
  if (typeof prefix !== 'string' || !PREFIX.test(prefix)) {
    throw new RangeError(
      `prefix: ${describe(prefix)} must be 1-64 characters of letters, digits and _ . : @ / + = ~ - (no braces: they would become the cluster hash tag)`,
    );
  }
  const store = options.store ?? memoryStore();
  if (typeof store !== 'object' || store === null || typeof store.evaluate !== 'function') {
    throw new TypeError(
      `store: expected memoryStore(), redisStore({ client }) or another Store, got ${describe(store)}`,
    );
  }

  function head(key: unknown): string {
    if (typeof key !== 'string' || key.length === 0) {
      throw new TypeError(`key: expected a non-empty string, got ${describe(key)}`);
    }
    return keyHead(prefix, key);
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

  async function evaluate(
    key: string,
    options: CheckOptions | undefined,
    consume: boolean,
  ): Promise<Decision> {
    const cost = costOf(options);
    const raw = await store.evaluate(head(key), rules, cost, consume);
    return decide(rules, raw, cost);
  }

  return {
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
      await store.reset(head(key), rules);
    },
  };
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
