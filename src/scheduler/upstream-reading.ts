/**
 * What one upstream response says about its rate limits, as every header dialect reports it,
 * and the two pieces every dialect shares: looking a header up in whatever shape the response
 * carries them, and collecting budgets into a bounded reading.
 */

/** One budget the upstream announces. Times are ms from the moment the response was read. */
export interface UpstreamBudget {
  remaining?: number;
  resetMs?: number;
  retryAfterMs?: number;
  limit?: number;
}

/**
 * A response: its status and headers as a Fetch `Headers`, a `Map`, a plain object (any case) or
 * Node's `IncomingHttpHeaders` (arrays for repeated fields).
 */
export interface ResponseLike {
  readonly status: number;
  readonly headers: unknown;
}

/** What one response says: a pause (429/503 Retry-After, retry-after-ms) and budgets by name ('requests', 'tokens', ... or IETF policy names). */
export interface UpstreamReading {
  readonly retryAfterMs?: number;
  readonly budgets: Readonly<Record<string, UpstreamBudget>>;
}

/** Reads one response at `nowMs` (epoch ms); `undefined` when it says nothing about limits. */
export type BudgetReader = (response: ResponseLike, nowMs: number) => UpstreamReading | undefined;

/** A header's value by lower-case name (repeated fields joined by `, `), or `undefined`. */
export type HeaderLookup = (name: string) => string | undefined;

/** The most budgets one reading holds; names past it are ignored, so no response can grow it. */
export const MAX_BUDGETS = 16;

function fieldText(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number') return String(value);
  if (!Array.isArray(value)) return undefined;
  const parts = value.filter((part): part is string => typeof part === 'string');
  return parts.length === 0 ? undefined : parts.map((part) => part.trim()).join(', ');
}

/** The lookup of a response without headers: every dialect reads nothing from it. */
export const NO_HEADERS: HeaderLookup = () => undefined;

function indexed(entries: Iterable<readonly [unknown, unknown]>): HeaderLookup {
  const index = new Map<string, string>();
  for (const [name, value] of entries) {
    const text = typeof name === 'string' ? fieldText(value) : undefined;
    if (text === undefined) continue;
    const key = (name as string).toLowerCase();
    const before = index.get(key);
    index.set(key, before === undefined ? text : `${before}, ${text}`);
  }
  return index.size === 0 ? NO_HEADERS : (name) => index.get(name);
}

/** Header lookup over any of the shapes `ResponseLike.headers` may take; anything else has none. */
export function headerLookup(headers: unknown): HeaderLookup {
  if (headers === null || typeof headers !== 'object') return NO_HEADERS;
  if (headers instanceof Map) return indexed(headers);
  const get = (headers as { get?: unknown }).get;
  // Fetch Headers (and look-alikes such as axios's) look names up without regard to case.
  if (typeof get === 'function') return (name) => fieldText(get.call(headers, name));
  return indexed(Object.entries(headers));
}

/** Collects one response's pause and budgets; a budget with neither a limit nor a remaining is none. */
export function createReading() {
  const budgets: Record<string, UpstreamBudget> = Object.create(null);
  let names = 0;
  let retryAfterMs: number | undefined;
  return {
    has: (name: string): boolean => Object.hasOwn(budgets, name),
    budget(name: string, fields: UpstreamBudget): void {
      if (fields.remaining === undefined && fields.limit === undefined) return;
      if (!Object.hasOwn(budgets, name)) {
        if (names >= MAX_BUDGETS) return;
        names += 1;
      }
      const budget: UpstreamBudget = {};
      if (fields.remaining !== undefined) budget.remaining = fields.remaining;
      if (fields.resetMs !== undefined) budget.resetMs = fields.resetMs;
      if (fields.retryAfterMs !== undefined) budget.retryAfterMs = fields.retryAfterMs;
      if (fields.limit !== undefined) budget.limit = fields.limit;
      budgets[name] = budget;
    },
    /** Pauses for `ms`; of several pauses the longest holds. */
    pause(ms: number | undefined): void {
      if (ms !== undefined) retryAfterMs = Math.max(retryAfterMs ?? 0, ms);
    },
    done(): UpstreamReading | undefined {
      if (retryAfterMs === undefined) return names === 0 ? undefined : { budgets };
      return { retryAfterMs, budgets };
    },
  };
}
