/**
 * The options every HTTP adapter shares, validated once when the middleware is created; the
 * request path trusts the resolved form. Errors name the option and what it accepts, in the
 * same style as the rule errors.
 */

import { base64url, sha256, utf8 } from '../base/sha256.js';
import type { Decision } from '../core/decision.js';
import { describe } from '../describe.js';
import { createLimiter, type Limiter } from '../limiter.js';
import { checkOptions } from '../options.js';
import type { RuleOptions } from '../rules.js';
import type { Store } from '../stores/types.js';
import { HEADER_NAME, HEADER_STYLES, type HeaderStyle } from './headers.js';
import { DEFAULT_IPV6_SUBNET } from './ip.js';
import { OUTCOME_OPTIONS, type Outcome, parseOutcome } from './outcome.js';
import type { DenialStatus } from './problem.js';
import type { KeyPolicy } from './request-keys.js';

type MaybePromise<T> = T | Promise<T>;

/**
 * Options shared by every adapter: `rateLimit` (Express, Koa, Hono), `floodgate` (Fastify),
 * `createHttpGuard`, `createFetchGuard` and `FloodgateGuard`. `Res` is the adapter's response.
 */
export interface HttpOptions<Req, Res = unknown> {
  /** The limiter to check requests against. Give this, or `rules` (with `store` and `prefix`) to build one. */
  limiter?: Limiter;
  /** Rules of a limiter built for this middleware (see `createLimiter`). */
  rules?: RuleOptions | readonly RuleOptions[];
  /** Store of the limiter built from `rules`. Default: a new memory store. */
  store?: Store;
  /** Key prefix of the limiter built from `rules`. Default `'floodgate'`. */
  prefix?: string;
  /**
   * The key a request is counted under. Default: the client address (IPv6 grouped by
   * `ipv6Subnet`). To count known API keys on their own, use
   * `key: apiKeyOrAddress({ header: 'x-api-key', known: (key) => … })`.
   */
  key?: (req: Req) => MaybePromise<string>;
  /** Units a request takes: a positive integer or a function returning one. Default 1. */
  cost?: number | ((req: Req) => MaybePromise<number>);
  /**
   * The plan whose rules apply to a request (a limiter made with `plans`), e.g. a lookup by API
   * key; may be async. Undefined: the limiter's `defaultPlan`. An unknown plan is an error.
   */
  plan?: (req: Req) => MaybePromise<string | undefined>;
  /** Requests for which this returns true bypass the limiter (no count, no headers). */
  skip?: (req: Req) => MaybePromise<boolean>;
  /** Rate-limit headers to send: `'draft-6'` (default), `'draft-10'`, `'legacy'`, several of them, or `false`. */
  headers?: HeaderStyle | false | readonly HeaderStyle[];
  /** Called with every decision (allowed or denied), before the response, e.g. for logs and metrics. */
  onDecision?: (req: Req, decision: Decision) => MaybePromise<void>;
  /**
   * Opt-in, and unsafe wherever clients choose their own keys: every well-formed value of this
   * header is a bucket of its own, so a client that invents a new value per request is never
   * limited. Use it only when something before the limiter rejects unknown keys; otherwise use
   * `key: apiKeyOrAddress({ header, known })`. Default `false`: the key is the client address.
   */
  apiKeyHeader?: string | false;
  /** Secret for HMAC-SHA-256 of API keys (`apiKeyOrAddress`, `apiKeyHeader`). Default: none, plain SHA-256. */
  apiKeySecret?: string;
  /** Prefix length IPv6 clients are grouped by in address keys, 1-128. Default 64. */
  ipv6Subnet?: number;
  /**
   * Status of a denial while the key is blocked (`decision.blocked`: a rule's `block` period or
   * a block override): `403` or `429` (default). Other denials are always 429.
   */
  blockedStatus?: DenialStatus;
  /**
   * Give back the cost of requests whose response failed (`requestWasSuccessful` false, a
   * response cut short by the client, a handler that failed with a 5xx). Each request still
   * takes its cost when it arrives, so requests in flight can never pass the limit together.
   * Default `false`.
   */
  skipFailedRequests?: boolean;
  /** Give back the cost of requests whose response succeeded, e.g. count only failed logins. Default `false`. */
  skipSuccessfulRequests?: boolean;
  /** Whether a finished response counts as a success (sync or async). Default: status < 400. */
  requestWasSuccessful?: (req: Req, res: Res) => MaybePromise<boolean>;
  /**
   * The actual cost, known once the response has ended: a function, or the name of a response
   * header (or HTTP trailer) holding a non-negative integer. The request reserves `cost`, and
   * the difference is given back or charged (debt included) with `limiter.settle`. A missing or
   * garbled value leaves the reservation as it was.
   */
  settle?: string | ((req: Req, res: Res) => MaybePromise<number>);
}

/** The validated form of HttpOptions. */
export interface ResolvedHttpOptions<Req, Res = unknown> {
  readonly limiter: Limiter;
  readonly key: ((req: Req) => MaybePromise<string>) | undefined;
  readonly cost: number | ((req: Req) => MaybePromise<number>);
  readonly plan: ((req: Req) => MaybePromise<string | undefined>) | undefined;
  readonly skip: ((req: Req) => MaybePromise<boolean>) | undefined;
  readonly headers: readonly HeaderStyle[];
  readonly onDecision: ((req: Req, decision: Decision) => MaybePromise<void>) | undefined;
  readonly keyPolicy: KeyPolicy;
  readonly blockedStatus: DenialStatus;
  /** What to do once the response has ended; undefined when nothing. */
  readonly outcome: Outcome<Req, Res> | undefined;
}

export const HTTP_OPTIONS = [
  'limiter',
  'rules',
  'store',
  'prefix',
  'key',
  'cost',
  'plan',
  'skip',
  'headers',
  'onDecision',
  'apiKeyHeader',
  'apiKeySecret',
  'ipv6Subnet',
  'blockedStatus',
  ...OUTCOME_OPTIONS,
] as const;

/**
 * Validates the shared options. `adapter` names the caller in messages; `extra` lists the
 * adapter's own option names, which it validates itself.
 */
export function parseHttpOptions<Req, Res = unknown>(
  input: unknown,
  adapter: string,
  extra: readonly string[] = [],
): ResolvedHttpOptions<Req, Res> {
  const request = parseRequestOptions<Req, Res>(input, adapter, extra);
  return { limiter: resolveLimiter(input as HttpOptions<Req>), ...request };
}

/** Validates every shared option except the limiter ones (for options that only set defaults). */
export function parseRequestOptions<Req, Res = unknown>(
  input: unknown,
  adapter: string,
  extra: readonly string[] = [],
): Omit<ResolvedHttpOptions<Req, Res>, 'limiter'> {
  checkOptions(input, {
    owner: adapter,
    expected: 'an options object such as { limiter }',
    known: new Set([...HTTP_OPTIONS, ...extra]),
    rejectArrays: true,
  });
  const options = input as HttpOptions<Req, Res>;
  let cost: ResolvedHttpOptions<Req>['cost'] = 1;
  if (typeof options.cost === 'function') cost = options.cost;
  else if (options.cost !== undefined) {
    if (typeof options.cost !== 'number' || !Number.isSafeInteger(options.cost) || options.cost < 1) {
      throw new RangeError(
        `cost: ${describe(options.cost)} must be a positive integer or a function (req) => positive integer`,
      );
    }
    cost = options.cost;
  }
  return {
    key: optionalFunction(options.key, 'key'),
    cost,
    plan: optionalFunction(options.plan, 'plan'),
    skip: optionalFunction(options.skip, 'skip'),
    headers: parseHeaderStyles(options.headers),
    onDecision: optionalFunction(options.onDecision, 'onDecision'),
    keyPolicy: parseKeyPolicy(options),
    blockedStatus: parseBlockedStatus(options.blockedStatus),
    outcome: parseOutcome(options),
  };
}

/** The limiter the options give or describe: `limiter`, or one built from `rules`, `store`, `prefix`. */
export function resolveLimiter(
  options: Pick<HttpOptions<unknown>, 'limiter' | 'rules' | 'store' | 'prefix'>,
): Limiter {
  const { limiter, rules, store, prefix } = options;
  if (limiter !== undefined) {
    if (rules !== undefined || store !== undefined || prefix !== undefined) {
      throw new TypeError(
        `limiter: give either a limiter or rules (with store and prefix) to build one, not both`,
      );
    }
    if (typeof limiter !== 'object' || limiter === null || typeof limiter.check !== 'function') {
      throw new TypeError(`limiter: expected a limiter made by createLimiter(), got ${describe(limiter)}`);
    }
    return limiter;
  }
  if (rules === undefined) {
    throw new TypeError(
      `limiter: required; pass limiter: createLimiter({ rules, store }) or rules: { algorithm, limit, window } (with an optional store)`,
    );
  }
  return createLimiter({
    rules,
    ...(store === undefined ? {} : { store }),
    ...(prefix === undefined ? {} : { prefix }),
  });
}

/** Validates `headers` into a list of distinct styles (empty for `false`). */
export function parseHeaderStyles(value: unknown): readonly HeaderStyle[] {
  if (value === undefined) return ['draft-6'];
  if (value === false) return [];
  const list = Array.isArray(value) ? value : [value];
  const allowed = `${HEADER_STYLES.map((style) => `'${style}'`).join(', ')}, false, or a list of styles`;
  const styles: HeaderStyle[] = [];
  for (const [index, style] of list.entries()) {
    if (!HEADER_STYLES.includes(style)) {
      const where = Array.isArray(value) ? `headers[${index}]` : 'headers';
      throw new RangeError(`${where}: ${describe(style)} is not one of ${allowed}`);
    }
    if (!styles.includes(style)) styles.push(style);
  }
  if (styles.includes('draft-6') && styles.includes('draft-10')) {
    throw new RangeError(
      `headers: 'draft-6' and 'draft-10' cannot be sent together: both define RateLimit-Policy, with different syntax; choose one (either can be combined with 'legacy')`,
    );
  }
  return styles;
}

function parseKeyPolicy(
  options: Pick<HttpOptions<unknown>, 'apiKeyHeader' | 'apiKeySecret' | 'ipv6Subnet'>,
): KeyPolicy {
  const { apiKeyHeader = false, apiKeySecret, ipv6Subnet = DEFAULT_IPV6_SUBNET } = options;
  if (apiKeyHeader !== false && (typeof apiKeyHeader !== 'string' || !HEADER_NAME.test(apiKeyHeader))) {
    throw new RangeError(`apiKeyHeader: ${describe(apiKeyHeader)} must be a header name or false`);
  }
  if (apiKeySecret !== undefined && (typeof apiKeySecret !== 'string' || apiKeySecret.length === 0)) {
    throw new TypeError(`apiKeySecret: expected a non-empty string, got ${describe(apiKeySecret)}`);
  }
  if (!Number.isSafeInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
    throw new RangeError(`ipv6Subnet: ${describe(ipv6Subnet)} must be an integer from 1 to 128`);
  }
  return {
    apiKeyHeader: apiKeyHeader === false ? undefined : apiKeyHeader.toLowerCase(),
    apiKeySecret: apiKeySecret === undefined ? undefined : utf8(apiKeySecret),
    ipv6Subnet,
  };
}

/** Validates `blockedStatus`: 403 or 429, default 429. */
export function parseBlockedStatus(value: unknown): DenialStatus {
  if (value === undefined) return 429;
  if (value !== 403 && value !== 429) {
    throw new RangeError(`blockedStatus: ${describe(value)} must be 403 or 429`);
  }
  return value;
}

/** Validates an optional callback option. */
export function optionalFunction<F>(value: F | undefined, option: string): F | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new TypeError(`${option}: expected a function, got ${describe(value)}`);
  }
  return value;
}

/** Must match createLimiter's prefix rule. */
const PREFIX = /^[A-Za-z0-9_.:@/+=~-]{1,64}$/;

/**
 * The key prefix of a limiter scoped to one route: `<base>:<scope>` when that is a valid prefix,
 * else `<base>:route~<digest of digestSource>`, so every route gets counts of its own.
 */
export function scopedPrefix(base: string, scope: string, digestSource = scope): string {
  const readable = `${base}:${scope}`;
  if (PREFIX.test(readable)) return readable;
  const digest = base64url(sha256(utf8(digestSource))).slice(0, 16);
  return `${base.slice(0, 40)}:route~${digest}`;
}
