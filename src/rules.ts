/**
 * Rule options: the one place where a rule is validated and turned into the resolved form the
 * rest of the code trusts. Every error names the option, the value and what is allowed.
 */
import type { BlockParams } from './algorithms/block.js';
import { DEFAULT_LEASE_MS } from './algorithms/concurrency.js';
import { ALGORITHM_NAMES, ALGORITHMS, type AlgorithmName, calendarWindow } from './algorithms/index.js';
import type { CalendarPeriods, QuotaLeaseParams, ResolvedRule } from './base/types.js';
import {
  createCalendar,
  isTimeZone,
  NO_ANCHOR,
  PERIOD_NAMES,
  type PeriodName,
  parseAnchor,
} from './calendar/index.js';
import { describe } from './describe.js';
import { type Duration, parseDuration } from './duration.js';
import { checkOptions } from './options.js';

/** One limit a key must stay under. */
export interface RuleOptions {
  /**
   * Names the rule in decisions, headers and Redis keys: letters, digits, `_`, `.`, `-`, at most
   * 64 characters. Default: `<algorithm>-<limit>-per-<window>`, e.g. `sliding-window-120-per-1m`.
   */
  name?: string;
  /** `'fixed-window' | 'sliding-log' | 'sliding-window' | 'token-bucket' | 'gcra' | 'concurrency'`. */
  algorithm: AlgorithmName;
  /**
   * Units (requests, or cost units; see `counts`) admitted per window: a positive integer. For
   * `'concurrency'`: the most slots held at once (a check takes `cost` slots, 1 by default, or 1
   * whatever the cost with `counts: 'requests'`).
   */
  limit: number;
  /**
   * The window: milliseconds, or a duration string such as `'500ms'`, `'10s'`, `'1m'`, `'1h'`, `'1d'`.
   * Required by every algorithm but `'concurrency'`, which has none.
   */
  window?: Duration;
  /** token-bucket and gcra only: the bucket's capacity, the largest burst. Default: `limit`. */
  burst?: number;
  /**
   * concurrency only: the longest a slot is held when nobody releases or renews it, on the
   * store's clock (crash recovery). Default `'1m'`.
   */
  lease?: Duration;
  /**
   * Evaluated, and its state kept, as if enforced, but it never denies: a check it would deny
   * is allowed and names it in `shadowDenied`. For rolling out a new limit. Default `false`.
   */
  shadow?: boolean;
  /**
   * Once this rule denies a key, keep denying it for this long, whatever the window allows:
   * `'15m'`, or `{ duration, factor, max, forgetAfter }` for escalating blocks (each new block
   * within `forgetAfter` of the last one's end lasts `factor` times the last, up to `max`).
   * Defaults: `factor` 1, `max` the duration (one day when `factor` > 1), `forgetAfter` `max`.
   */
  block?: Duration | BlockOptions;
  /**
   * What a check takes from this rule: `'cost'` (default) takes the check's `cost`; `'requests'`
   * takes 1 whatever the cost, so one check can count requests and tokens at once (RPM + TPM).
   * Settling changes only `'cost'` rules. A `'concurrency'` rule counting requests holds one
   * slot per request.
   */
  counts?: RuleCounts;
  /**
   * Quota leasing for hot keys on a shared store (see docs/leasing.md): a process takes a slice of
   * the key's quota in one store call and admits the next checks from it locally, never above the
   * limit. `true`, or `{ max }`: the largest slice in units (default 1000, at most the capacity).
   * fixed-window, sliding-window, token-bucket and gcra only; every rule of a rule set or none.
   */
  quotaLease?: boolean | QuotaLeaseOptions;
  /**
   * Count by calendar period instead of a window (`'fixed-window'` only, without `window`): the
   * day, ISO week (from Monday), month or year in `timeZone`, starting at `anchor`. The reset is
   * the period's exact end; a DST day is 23 or 25 hours long. See docs/calendar.md.
   */
  period?: PeriodName;
  /** With `period`: the IANA time zone its periods are counted in, e.g. `'America/New_York'`. Default `'UTC'`. */
  timeZone?: string;
  /**
   * With `period`: a local date-time without offset, e.g. `'2026-01-31T09:30'`, setting the time
   * of day, the weekday (weeks), the day of the month (months, years; the 29th-31st fall on a
   * shorter month's last day) and the month (years). Default: midnight, Monday, the 1st, January 1st.
   */
  anchor?: string;
  /**
   * With `period`: usage fractions in (0, 1], e.g. `[0.8, 1]`; the limiter emits a `threshold`
   * event once per key, rule, threshold and period when usage reaches `fraction × limit`.
   */
  thresholds?: readonly number[];
}

/** A rule's quota leasing (see `RuleOptions.quotaLease`). */
export interface QuotaLeaseOptions {
  /** The largest slice a process takes at once, in units: an integer from 1 to the rule's capacity. Default 1000 (or the capacity). */
  max?: number;
}

/** What a rule counts (see `RuleOptions.counts`). */
export type RuleCounts = 'requests' | 'cost';

/** A rule's escalating block (see `RuleOptions.block`). */
export interface BlockOptions {
  /** The first block's length. */
  duration: Duration;
  /** Each new block within `forgetAfter` lasts this many times the last: a number from 1 to 1000. Default 1. */
  factor?: number;
  /** The longest block. Default: `duration`, or one day (at least `duration`) when `factor` > 1. */
  max?: Duration;
  /** How long after a block's end the next one still escalates from it. Default: `max`. */
  forgetAfter?: Duration;
}

/**
 * Keeps every intermediate product (e.g. `limit × window`, scaled token counts) an exact integer
 * in both JavaScript and Lua doubles, with headroom for sums of two such products.
 */
export const MAX_UNITS_TIMES_WINDOW = 2 ** 51;
/**
 * Most rules one check evaluates. A check is one atomic store call (on Redis, one script call
 * that blocks the server while it runs, with up to two keys per rule), and the Redis store sends
 * at most MAX_BATCH_KEYS keys per call (see stores/redis/batch.ts): this bound keeps every check
 * within one call.
 */
export const MAX_RULES = 1000;
const RULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const RULE_KEYS = new Set([
  'name',
  'algorithm',
  'limit',
  'window',
  'burst',
  'lease',
  'shadow',
  'block',
  'counts',
  'quotaLease',
  'period',
  'timeZone',
  'anchor',
  'thresholds',
]);
const QUOTA_LEASE_KEYS = new Set(['max']);
/** The largest slice when `quotaLease: true`: 1000 units keeps a hot key near one store call per 1000 checks. */
const DEFAULT_LEASE_MAX = 1000;
/** The algorithms whose state a slice can be taken from and given back to (see docs/leasing.md). */
const LEASABLE = new Set<AlgorithmName>(['fixed-window', 'sliding-window', 'token-bucket', 'gcra']);
const BLOCK_KEYS = new Set(['duration', 'factor', 'max', 'forgetAfter']);
/** The longest block or forgetAfter: a year and a day keeps every stored end an exact integer. */
export const MAX_BLOCK_MS = 366 * 86_400_000;
const DAY_MS = 86_400_000;
/** Most thresholds a rule takes: a check's crossings travel as a bit mask in one reply integer. */
const MAX_THRESHOLDS = 20;
/** A calendar rule's nominal window (the RateLimit-Policy window, the limit × window bound): its longest period. */
const PERIOD_MS: Readonly<Record<PeriodName, number>> = {
  day: DAY_MS,
  week: 7 * DAY_MS,
  month: 31 * DAY_MS,
  year: 366 * DAY_MS,
};

/**
 * Validates one rule or a list of rules.
 * @param option where the rules came from, for error messages (e.g. `rules`, `plans.pro`).
 * @param shadow makes every rule a shadow rule (the limiter's own `shadow` option).
 */
export function resolveRules(input: unknown, option = 'rules', shadow = false): ResolvedRule[] {
  const list = Array.isArray(input) ? input : [input];
  if (input === undefined || list.length === 0) {
    throw new TypeError(
      `${option}: at least one rule is required, e.g. { algorithm: 'sliding-window', limit: 100, window: '1m' }`,
    );
  }
  if (list.length > MAX_RULES) {
    throw new RangeError(
      `${option}: ${list.length} rules given; at most ${MAX_RULES} rules can be evaluated in one atomic store call`,
    );
  }
  const rules = list.map((rule, index) =>
    resolveRule(rule, Array.isArray(input) ? `${option}[${index}]` : option, shadow),
  );
  const seen = new Set<string>();
  for (const rule of rules) {
    if (seen.has(rule.name)) {
      throw new RangeError(
        `${option}: duplicate rule name ${JSON.stringify(rule.name)}; give each rule a distinct name`,
      );
    }
    seen.add(rule.name);
  }
  return rules;
}

function resolveRule(input: unknown, option: string, shadowAll: boolean): ResolvedRule {
  checkOptions(input, {
    owner: option,
    expected: 'a rule object such as { algorithm, limit, window }',
    known: RULE_KEYS,
    rejectArrays: true,
    unknown: (name, known) => `${option}.${name}: unknown option; a rule takes ${known}`,
  });
  const rule = input as Record<string, unknown>;
  const algorithmName = rule.algorithm;
  if (typeof algorithmName !== 'string' || !Object.hasOwn(ALGORITHMS, algorithmName)) {
    throw new RangeError(
      `${option}.algorithm: ${describe(algorithmName)} is not one of ${ALGORITHM_NAMES.map((n) => `'${n}'`).join(', ')}`,
    );
  }
  const periods = resolvePeriods(rule, algorithmName as AlgorithmName, option);
  const algorithm = periods === undefined ? ALGORITHMS[algorithmName as AlgorithmName] : calendarWindow;
  const limit = positiveInteger(rule.limit, `${option}.limit`, algorithm.maxLimit);
  const windowMs = periods === undefined ? windowOf(rule, algorithm.name, option) : PERIOD_MS[periods.period];
  const thresholds = resolveThresholds(rule.thresholds, `${option}.thresholds`, periods);
  let capacity = limit;
  if (rule.burst !== undefined) {
    if (!algorithm.hasBurst) {
      throw new TypeError(
        `${option}.burst: ${describe(rule.burst)} is not allowed: '${algorithm.name}' has no burst; only 'token-bucket' and 'gcra' take one`,
      );
    }
    capacity = positiveInteger(rule.burst, `${option}.burst`, Number.MAX_SAFE_INTEGER);
  }
  const largest = Math.max(limit, capacity);
  // A calendar rule only counts (no product of units and time), so a monthly million is fine.
  if (periods === undefined && largest * windowMs > MAX_UNITS_TIMES_WINDOW) {
    throw new RangeError(
      `${option}: ${capacity > limit ? 'burst' : 'limit'} × window (${largest} × ${windowMs} ms) must be at most 2^51; use a smaller limit or window`,
    );
  }
  const name =
    rule.name === undefined
      ? periods === undefined
        ? defaultName(algorithm.name, limit, windowMs)
        : `${algorithm.name}-${limit}-per-${periods.period}`
      : rule.name;
  if (typeof name !== 'string' || !RULE_NAME.test(name)) {
    throw new RangeError(
      `${option}.name: ${describe(name)} must be 1-64 characters of letters, digits, '_', '.', '-', starting with a letter or digit`,
    );
  }
  const shadow = shadowAll || booleanOption(rule.shadow, `${option}.shadow`);
  const block = rule.block === undefined ? undefined : resolveBlock(rule.block, `${option}.block`);
  const counts = countsOf(rule.counts, `${option}.counts`);
  const quotaLease = resolveQuotaLease(rule.quotaLease, `${option}.quotaLease`, algorithm.name, capacity);
  if (quotaLease !== undefined && (shadow || block !== undefined)) {
    throw new TypeError(
      `${option}.quotaLease: not allowed with ${shadow ? 'shadow' : 'block'}: slices are admitted locally, where a ${shadow ? 'shadow rule cannot report its would-be denials' : 'block cannot start'}`,
    );
  }
  if (quotaLease !== undefined && periods !== undefined) {
    throw new TypeError(
      `${option}.quotaLease: not allowed with period: slices are taken from fixed, sliding and bucket windows only`,
    );
  }
  if (quotaLease !== undefined && counts === 'requests') {
    throw new TypeError(
      `${option}.quotaLease: not allowed with counts: 'requests': a slice holds the same units for every rule of its set, so each check must take its cost from each`,
    );
  }
  return {
    name,
    algorithm,
    limit,
    windowMs,
    capacity,
    keyTail: `:${name}:${algorithm.tag}`,
    shadow,
    block,
    counts,
    ...(quotaLease === undefined ? {} : { quotaLease }),
    ...(periods === undefined ? {} : { periods }),
    ...(thresholds === undefined
      ? {}
      : { thresholds, thresholdUnits: thresholds.map((t) => unitsOf(t, limit)) }),
  };
}

/** A rule's `period`, `timeZone` and `anchor` as its calendar, or undefined for a rule without `period`. */
function resolvePeriods(
  rule: Record<string, unknown>,
  algorithm: AlgorithmName,
  option: string,
): CalendarPeriods | undefined {
  const { period, timeZone, anchor } = rule;
  if (period === undefined) {
    for (const field of ['timeZone', 'anchor'] as const) {
      if (rule[field] !== undefined) {
        throw new TypeError(
          `${option}.${field}: ${describe(rule[field])} is not allowed without period: only a rule counted by calendar period has one`,
        );
      }
    }
    return undefined;
  }
  if (typeof period !== 'string' || !PERIOD_NAMES.includes(period as PeriodName)) {
    throw new RangeError(
      `${option}.period: ${describe(period)} is not one of ${PERIOD_NAMES.map((n) => `'${n}'`).join(', ')}`,
    );
  }
  if (algorithm !== 'fixed-window') {
    throw new TypeError(
      `${option}.period: ${describe(period)} is not allowed with '${algorithm}': only 'fixed-window' rules count by calendar period`,
    );
  }
  if (rule.window !== undefined) {
    throw new TypeError(
      `${option}.window: ${describe(rule.window)} is not allowed with period: the period is the window`,
    );
  }
  const zone = timeZone ?? 'UTC';
  if (typeof zone !== 'string' || !isTimeZone(zone)) {
    throw new RangeError(
      `${option}.timeZone: ${describe(zone)} is not an IANA time zone this platform knows, e.g. 'UTC' or 'America/New_York'`,
    );
  }
  if (anchor !== undefined && typeof anchor !== 'string') {
    throw new TypeError(`${option}.anchor: ${describe(anchor)} must be a string such as '2026-01-31T09:30'`);
  }
  const parsed = anchor === undefined ? NO_ANCHOR : parseAnchor(anchor);
  if (parsed === undefined) {
    throw new RangeError(
      `${option}.anchor: ${describe(anchor)} must be a real local date-time without offset: 'YYYY-MM-DD', optionally 'THH:mm', ':ss', '.sss', e.g. '2026-01-31T09:30'`,
    );
  }
  return createCalendar(period as PeriodName, zone, parsed, anchor);
}

/** The usage that reaches `fraction` of `limit`: at least 1, rounded past float noise (0.7 × 10 is 7, not 8). */
function unitsOf(fraction: number, limit: number): number {
  return Math.max(1, Math.ceil(Math.round(fraction * limit * 1e6) / 1e6));
}

/** A rule's `thresholds`: distinct fractions in (0, 1], ascending; undefined when none. */
function resolveThresholds(
  input: unknown,
  option: string,
  periods: CalendarPeriods | undefined,
): readonly number[] | undefined {
  if (input === undefined) return undefined;
  if (periods === undefined) {
    throw new TypeError(
      `${option}: ${describe(input)} is not allowed without period: thresholds are announced once per calendar period`,
    );
  }
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_THRESHOLDS) {
    throw new TypeError(
      `${option}: ${describe(input)} must be an array of 1 to ${MAX_THRESHOLDS} fractions in (0, 1], e.g. [0.8, 1]`,
    );
  }
  for (const [index, value] of input.entries()) {
    if (typeof value !== 'number' || !(value > 0 && value <= 1)) {
      throw new RangeError(`${option}[${index}]: ${describe(value)} must be a fraction in (0, 1], e.g. 0.8`);
    }
  }
  return [...new Set(input as number[])].sort((a, b) => a - b);
}

function countsOf(value: unknown, option: string): RuleCounts {
  if (value === undefined) return 'cost';
  if (value !== 'requests' && value !== 'cost') {
    throw new RangeError(`${option}: ${describe(value)} must be 'requests' or 'cost'`);
  }
  return value;
}

/** Validates a rule's `quotaLease`: `true`, `false`, or `{ max }`; undefined when off. */
function resolveQuotaLease(
  input: unknown,
  option: string,
  algorithm: AlgorithmName,
  capacity: number,
): QuotaLeaseParams | undefined {
  if (input === undefined || input === false) return undefined;
  if (!LEASABLE.has(algorithm)) {
    throw new TypeError(
      `${option}: not allowed for '${algorithm}': only 'fixed-window', 'sliding-window', 'token-bucket' and 'gcra' rules can lease quota`,
    );
  }
  if (input === true) return { max: Math.min(DEFAULT_LEASE_MAX, capacity) };
  checkOptions(input, {
    owner: option,
    expected: 'true or { max }',
    known: QUOTA_LEASE_KEYS,
    rejectArrays: true,
    unknown: (name, known) => `${option}.${name}: unknown option; quotaLease takes ${known}`,
  });
  const { max } = input as QuotaLeaseOptions;
  return {
    max:
      max === undefined
        ? Math.min(DEFAULT_LEASE_MAX, capacity)
        : positiveInteger(max, `${option}.max`, capacity),
  };
}

function blockDuration(value: unknown, option: string): number {
  const ms = parseDuration(value, option);
  if (ms > MAX_BLOCK_MS) throw new RangeError(`${option}: ${describe(value)} must be at most 366d`);
  return ms;
}

/** Validates a rule's `block`: a duration, or `{ duration, factor, max, forgetAfter }`. */
function resolveBlock(input: unknown, option: string): BlockParams {
  if (typeof input === 'number' || typeof input === 'string') {
    const durationMs = blockDuration(input, option);
    return { durationMs, factor: 1, maxMs: durationMs, forgetMs: durationMs };
  }
  checkOptions(input, {
    owner: option,
    expected: "a duration such as '15m' or { duration, factor, max, forgetAfter }",
    known: BLOCK_KEYS,
    rejectArrays: true,
    unknown: (name, known) => `${option}.${name}: unknown option; a block takes ${known}`,
  });
  const block = input as Record<string, unknown>;
  const durationMs = blockDuration(block.duration, `${option}.duration`);
  const factor = block.factor ?? 1;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1 || factor > 1000) {
    throw new RangeError(`${option}.factor: ${describe(factor)} must be a number from 1 to 1000`);
  }
  const maxMs =
    block.max === undefined
      ? factor === 1
        ? durationMs
        : Math.max(durationMs, DAY_MS)
      : blockDuration(block.max, `${option}.max`);
  if (maxMs < durationMs) {
    throw new RangeError(
      `${option}.max: ${describe(block.max)} must be at least the duration (${durationMs} ms)`,
    );
  }
  const forgetMs =
    block.forgetAfter === undefined ? maxMs : blockDuration(block.forgetAfter, `${option}.forgetAfter`);
  return { durationMs, factor, maxMs, forgetMs };
}

/** A rule's window in ms: its `window`, or for a concurrency rule its `lease` (each refused where it has no meaning). */
function windowOf(rule: Record<string, unknown>, algorithm: AlgorithmName, option: string): number {
  if (algorithm !== 'concurrency') {
    if (rule.lease !== undefined) {
      throw new TypeError(
        `${option}.lease: ${describe(rule.lease)} is not allowed: only 'concurrency' rules hold slots on a lease`,
      );
    }
    return parseDuration(rule.window, `${option}.window`);
  }
  if (rule.window !== undefined) {
    throw new TypeError(
      `${option}.window: ${describe(rule.window)} is not allowed: a 'concurrency' rule has no window; its slots are held for at most \`lease\``,
    );
  }
  return rule.lease === undefined ? DEFAULT_LEASE_MS : parseDuration(rule.lease, `${option}.lease`);
}

function defaultName(algorithm: AlgorithmName, limit: number, windowMs: number): string {
  if (algorithm === 'concurrency') return `concurrency-${limit}`;
  return `${algorithm}-${limit}-per-${formatDuration(windowMs)}`;
}

/** Validates a positive safe integer option such as a limit or a cost. */
export function positiveInteger(value: unknown, option: string, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new RangeError(`${option}: ${describe(value)} must be an integer from 1 to ${max}`);
  }
  return value;
}

/** Validates an optional boolean option (absent: false). */
export function booleanOption(value: unknown, option: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${option}: ${describe(value)} must be true or false`);
  return value;
}

/** The shortest exact rendering of a duration: 60000 → '1m', 1500 → '1500ms'. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
