/**
 * The scheduler's `headers` option: which upstream rate-limit headers to read, validated once,
 * and the reader it resolves to. Budgets are named ('requests', 'tokens', IETF policy names);
 * every time is ms from the moment the response is read, clamped to [0, 1 day]; every count to
 * [0, 10^15 - 1]. A header that does not parse is ignored, never guessed at.
 */
import { describe } from '../describe.js';
import { DIALECT_READERS, PAUSING } from './header-dialects.js';
import { clampCount, clampWait, readRetryAfter } from './header-values.js';
import {
  type BudgetReader,
  createReading,
  headerLookup,
  NO_HEADERS,
  type ResponseLike,
  type UpstreamBudget,
  type UpstreamReading,
} from './upstream-reading.js';

export { MAX_UPSTREAM_COUNT, MAX_UPSTREAM_WAIT_MS } from './header-values.js';
export { MAX_BUDGETS } from './upstream-reading.js';
export type { BudgetReader, ResponseLike, UpstreamBudget, UpstreamReading };

export type HeaderDialect = 'ietf' | 'openai' | 'anthropic' | 'github';
export const HEADER_DIALECTS: readonly HeaderDialect[] = ['ietf', 'openai', 'anthropic', 'github'];

/** A user's reader: one budget (named 'requests'), budgets by name, or nothing. */
export type UserBudgetReader = (response: ResponseLike) => unknown;

function statusOf(response: ResponseLike): number {
  return Number.isInteger(response.status) ? response.status : 0;
}

function dialectReader(dialect: HeaderDialect): BudgetReader {
  const read = DIALECT_READERS[dialect];
  return function readUpstreamHeaders(response, nowMs) {
    const get = headerLookup(response.headers);
    const status = statusOf(response);
    // Only an error status says something without headers (GitHub's bare 429 pauses a minute).
    return get === NO_HEADERS && status < 400 ? undefined : read(get, status, nowMs);
  };
}

const BUDGET_FIELDS = ['remaining', 'resetMs', 'retryAfterMs', 'limit'] as const;

function numberOr(value: unknown): number {
  return typeof value === 'number' ? value : Number.NaN;
}

/** A user's budget, with every field checked and clamped like a header's. */
function userBudget(value: unknown): UpstreamBudget {
  if (value === null || typeof value !== 'object') return {};
  const fields = value as Record<string, unknown>;
  return {
    remaining: clampCount(numberOr(fields.remaining)),
    resetMs: clampWait(numberOr(fields.resetMs)),
    retryAfterMs: clampWait(numberOr(fields.retryAfterMs)),
    limit: clampCount(numberOr(fields.limit)),
  };
}

function userReader(read: UserBudgetReader): BudgetReader {
  return function readUserBudgets(response, nowMs) {
    const result = read(response);
    const reading = createReading();
    // Retry-After is read as in every dialect; the function adds budgets (and pauses) to it.
    if (PAUSING.has(statusOf(response))) reading.pause(readRetryAfter(headerLookup(response.headers), nowMs));
    if (result === null || typeof result !== 'object') return reading.done();
    if (typeof (result as { then?: unknown }).then === 'function') {
      throw new TypeError('headers: the function returned a promise; it must return the budget itself');
    }
    const fields = result as Record<string, unknown>;
    const single = BUDGET_FIELDS.some((field) => typeof fields[field] === 'number');
    for (const [name, value] of single ? [['requests', result] as const] : Object.entries(fields)) {
      const budget = userBudget(value);
      reading.budget(name, budget);
      // A budget's own Retry-After pauses the key, as a response's does.
      reading.pause(budget.retryAfterMs);
    }
    return reading.done();
  };
}

/**
 * Validates the `headers` option (naming it and the allowed values) and returns its reader, or
 * `undefined` for `false`. `undefined` is the default, `'ietf'`. A user function
 * `(response) => UpstreamBudget | Record<string, UpstreamBudget> | undefined` is wrapped (a
 * single budget is named 'requests'); what it returns is clamped like a header, and what it
 * throws reaches the caller. A 429 or 503's Retry-After is read beside it, as in every dialect.
 *
 * @example
 * const read = budgetReader('openai');
 * read?.({ status: 200, headers: { 'x-ratelimit-remaining-requests': '59' } }, Date.now());
 * // { budgets: { requests: { remaining: 59 } } }
 */
export function budgetReader(
  option: HeaderDialect | UserBudgetReader | false | undefined,
): BudgetReader | undefined {
  if (option === false) return undefined;
  if (option === undefined) return dialectReader('ietf');
  if (typeof option === 'function') return userReader(option);
  if (typeof option === 'string' && (HEADER_DIALECTS as readonly string[]).includes(option)) {
    return dialectReader(option);
  }
  const Problem = typeof option === 'string' ? RangeError : TypeError;
  throw new Problem(
    `headers: ${describe(option)} must be ${HEADER_DIALECTS.map((d) => `'${d}'`).join(', ')}, a function (response) => budget, or false`,
  );
}
