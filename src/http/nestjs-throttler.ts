/**
 * `FloodgateThrottlerStorage`: a storage for `@nestjs/throttler`, so an application keeps its
 * `ThrottlerModule` configuration, guards and decorators and moves its counts to a Floodgate
 * store (memory, or Redis shared by every instance) by one line:
 * `ThrottlerModule.forRoot({ throttlers, storage: new FloodgateThrottlerStorage({ store }) })`.
 *
 * Each throttler (`limit` per `ttl`) is a sliding-log rule: exactly `limit` requests in any
 * `ttl`, on the store's clock. A denied request consumes nothing and waits until its oldest
 * counted request leaves the window. A `blockDuration` becomes the rule's `block`: the request
 * over the limit blocks the key for that long (or until the window allows, if later). Nest
 * passes `blockDuration = ttl` for a throttler that sets none, so 0 and `ttl` add no block.
 */
import { resolvePrefix } from '../base/key-encoding.js';
import { describe } from '../describe.js';
import { createLimiter, type Limiter, resolveStore } from '../limiter.js';
import { checkOptions } from '../options.js';
import { MAX_BLOCK_MS } from '../rules.js';
import type { Store } from '../stores/types.js';
import { scopedPrefix } from './options.js';

export interface FloodgateThrottlerStorageOptions {
  /** Where the counts live. Default: a new memory store (one process). */
  store?: Store;
  /** Key prefix of the counts; each throttler's limit and ttl are appended. Default `'floodgate-throttler'`. */
  prefix?: string;
}

/** What `@nestjs/throttler` expects of `increment` (its ThrottlerStorageRecord), declared here so
 * the types need `@nestjs/throttler` only where it is used. */
interface ThrottlerRecord {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
}

const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * The `storage` of `ThrottlerModule.forRoot`.
 * @example ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 10 }], storage: new FloodgateThrottlerStorage({ store: redisStore({ client }) }) })
 */
export class FloodgateThrottlerStorage {
  readonly #store: Store | undefined;
  readonly #prefix: string;
  /** One limiter per throttler name, ttl, limit and block (each may be resolved per request). */
  readonly #limiters = new Map<string, Limiter>();

  constructor(options: FloodgateThrottlerStorageOptions = {}) {
    checkOptions(options, {
      owner: 'FloodgateThrottlerStorage',
      expected: 'an options object such as { store }',
      known: new Set(['store', 'prefix']),
      rejectArrays: true,
    });
    this.#store = options.store === undefined ? undefined : resolveStore(options.store, 'store');
    this.#prefix = resolvePrefix(options.prefix ?? 'floodgate-throttler');
  }

  async increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    throttlerName: string,
  ): Promise<ThrottlerRecord> {
    const decision = await this.#limiter(throttlerName, ttl, limit, blockDuration).check(key);
    if (decision.allowed) {
      return {
        totalHits: decision.limit - decision.remaining,
        timeToExpire: Math.ceil(decision.resetMs / 1000),
        isBlocked: false,
        timeToBlockExpire: 0,
      };
    }
    // Nest's guard sends timeToBlockExpire as Retry-After: the later of the block's end and the window's.
    const wait = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    return { totalHits: decision.limit + 1, timeToExpire: wait, isBlocked: true, timeToBlockExpire: wait };
  }

  #limiter(name: string, ttl: number, limit: number, blockDuration: number): Limiter {
    // Nest's default blockDuration (the ttl) keeps the plain sliding log, as 0 does.
    const block = blockDuration === ttl ? 0 : blockDuration;
    const id = `${name}\0${ttl}\0${limit}\0${block}`;
    let limiter = this.#limiters.get(id);
    if (limiter === undefined) {
      if (!Number.isSafeInteger(ttl) || ttl < 1 || !Number.isSafeInteger(limit) || limit < 1) {
        throw new RangeError(
          `FloodgateThrottlerStorage: throttler '${name}' has ttl ${describe(ttl)} and limit ${describe(limit)}; both must be positive integers (ttl in milliseconds)`,
        );
      }
      if (!Number.isSafeInteger(block) || block < 0 || block > MAX_BLOCK_MS) {
        throw new RangeError(
          `FloodgateThrottlerStorage: throttler '${name}' has blockDuration ${describe(blockDuration)}; it must be an integer from 0 to ${MAX_BLOCK_MS} (366 days, in milliseconds)`,
        );
      }
      limiter = createLimiter({
        rules: {
          name: RULE_NAME.test(name) ? name : 'throttle',
          algorithm: 'sliding-log',
          limit,
          window: ttl,
          ...(block > 0 ? { block } : {}),
        },
        // A block is kept in its own key beside the log, which it leaves as is: the same prefix.
        prefix: scopedPrefix(this.#prefix, `${ttl}:${limit}`),
        ...(this.#store === undefined ? {} : { store: this.#store }),
      });
      this.#limiters.set(id, limiter);
    }
    return limiter;
  }
}
