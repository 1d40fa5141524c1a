/**
 * STAND-IN for the `dialects` branch's module of the same name (same contract): only what the
 * scheduler's own tests need (Retry-After, retry-after-ms, OpenAI's budgets, a user function).
 * Replaced by that module at merge.
 */
import { describe } from '../describe.js';

export type HeaderDialect = 'ietf' | 'openai' | 'anthropic' | 'github';
export interface UpstreamBudget {
  remaining?: number;
  resetMs?: number;
  retryAfterMs?: number;
  limit?: number;
}
export interface ResponseLike {
  readonly status: number;
  readonly headers: unknown;
}
export interface UpstreamReading {
  readonly retryAfterMs?: number;
  readonly budgets: Readonly<Record<string, UpstreamBudget>>;
}
export type BudgetReader = (response: ResponseLike, nowMs: number) => UpstreamReading | undefined;

const DIALECTS = ['ietf', 'openai', 'anthropic', 'github'];

function header(headers: unknown, name: string): string | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  const get = (headers as { get?: unknown }).get;
  const value =
    typeof get === 'function' ? get.call(headers, name) : (headers as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** '1s', '6m0s', '12ms' as OpenAI writes them. */
function openAiDuration(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    ms += Number(amount) * ({ ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as string] ?? 0);
  }
  return Math.ceil(ms);
}

function retryAfter(response: ResponseLike, nowMs: number): number | undefined {
  const ms = header(response.headers, 'retry-after-ms');
  if (ms !== undefined && /^\d+$/.test(ms)) return Number(ms);
  const value = header(response.headers, 'retry-after');
  if (value === undefined || (response.status !== 429 && response.status !== 503)) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

function readOpenAi(response: ResponseLike): Record<string, UpstreamBudget> {
  const budgets: Record<string, UpstreamBudget> = {};
  for (const name of ['requests', 'tokens']) {
    const remaining = header(response.headers, `x-ratelimit-remaining-${name}`);
    if (remaining === undefined || !/^\d+$/.test(remaining)) continue;
    const resetMs = openAiDuration(header(response.headers, `x-ratelimit-reset-${name}`));
    budgets[name] = { remaining: Number(remaining), ...(resetMs === undefined ? {} : { resetMs }) };
  }
  return budgets;
}

export function budgetReader(
  option: HeaderDialect | ((response: ResponseLike) => unknown) | false | undefined,
): BudgetReader | undefined {
  if (option === false) return undefined;
  if (typeof option === 'function') {
    return (response, nowMs) => {
      const value = option(response) as Record<string, unknown> | undefined;
      if (value === undefined || value === null)
        return { retryAfterMs: retryAfter(response, nowMs), budgets: {} };
      const single = ['remaining', 'resetMs', 'retryAfterMs', 'limit'].some((field) => field in value);
      const budgets = (single ? { requests: value } : value) as Record<string, UpstreamBudget>;
      return { retryAfterMs: retryAfter(response, nowMs), budgets };
    };
  }
  const dialect = option ?? 'ietf';
  if (!DIALECTS.includes(dialect)) {
    throw new RangeError(
      `headers: ${describe(option)} must be 'ietf', 'openai', 'anthropic', 'github', a function or false`,
    );
  }
  return (response, nowMs) => ({
    retryAfterMs: retryAfter(response, nowMs),
    budgets: dialect === 'openai' ? readOpenAi(response) : {},
  });
}
