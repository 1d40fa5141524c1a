/**
 * An upstream API's hidden limit, as the scheduler lab and the tests' mock upstream play it:
 * requests and tokens per fixed window (aligned to the upstream's start), an optional cap on
 * requests in flight, and the headers a real API of each dialect answers with, 429 (or GitHub's
 * 403) past the limit. A refused request takes nothing. Time is an argument, so the lab can
 * run it on any clock.
 */

export const UPSTREAM_DIALECTS = ['openai', 'anthropic', 'github', 'github-secondary', 'ietf'] as const;
/** `github-secondary`: the headers announce a roomy primary limit; the hidden one answers 403 + retry-after. */
export type UpstreamDialect = (typeof UPSTREAM_DIALECTS)[number];

export interface HiddenLimitOptions {
  /** Requests per window. */
  requests: number;
  /** Tokens per window (not announced by GitHub, which has none). */
  tokens: number;
  windowMs: number;
  dialect: UpstreamDialect;
  /** Requests in flight at once past which a request is refused (a retry-after of 1 s). */
  concurrency?: number;
  /** Epoch ms the first window starts at. */
  startMs: number;
}

export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Tokens charged: the request's on success, 0 when refused. */
  readonly tokens: number;
}

/** A Go duration as OpenAI writes one: `12ms`, `1.5s`, `6m0s`, `1h2m3s`. */
export function goDuration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 1000) return `${whole}ms`;
  const hours = Math.floor(whole / 3_600_000);
  const minutes = Math.floor((whole % 3_600_000) / 60_000);
  const seconds = (whole % 60_000) / 1000;
  return `${hours ? `${hours}h` : ''}${hours || minutes ? `${minutes}m` : ''}${seconds}s`;
}

const ceilSeconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

/** The primary limit `github-secondary` announces: GitHub's 5,000 an hour. */
const GITHUB_PRIMARY = 5000;

export function createHiddenLimit(options: HiddenLimitOptions) {
  const { requests, tokens, windowMs, dialect, startMs } = options;
  let window = -1;
  let usedRequests = 0;
  let usedTokens = 0;
  let primaryUsed = 0;

  function budgetHeaders(nowMs: number): Record<string, string> {
    const resetMs = startMs + (window + 1) * windowMs - nowMs;
    const leftRequests = requests - usedRequests;
    const leftTokens = tokens - usedTokens;
    switch (dialect) {
      case 'openai':
        return {
          'x-ratelimit-limit-requests': String(requests),
          'x-ratelimit-limit-tokens': String(tokens),
          'x-ratelimit-remaining-requests': String(leftRequests),
          'x-ratelimit-remaining-tokens': String(leftTokens),
          'x-ratelimit-reset-requests': goDuration(resetMs),
          'x-ratelimit-reset-tokens': goDuration(resetMs),
        };
      case 'anthropic': {
        const reset = new Date(nowMs + resetMs).toISOString();
        return {
          'anthropic-ratelimit-requests-limit': String(requests),
          'anthropic-ratelimit-requests-remaining': String(leftRequests),
          'anthropic-ratelimit-requests-reset': reset,
          'anthropic-ratelimit-tokens-limit': String(tokens),
          'anthropic-ratelimit-tokens-remaining': String(leftTokens),
          'anthropic-ratelimit-tokens-reset': reset,
        };
      }
      case 'github':
      case 'github-secondary': {
        const primary = dialect === 'github';
        const limit = primary ? requests : GITHUB_PRIMARY;
        const used = primary ? usedRequests : primaryUsed;
        const resetAt = primary ? nowMs + resetMs : startMs + 3_600_000;
        return {
          'x-ratelimit-limit': String(limit),
          'x-ratelimit-remaining': String(Math.max(0, limit - used)),
          'x-ratelimit-used': String(used),
          'x-ratelimit-reset': String(ceilSeconds(resetAt)),
          'x-ratelimit-resource': 'core',
        };
      }
      case 'ietf': {
        const w = Math.max(1, ceilSeconds(windowMs));
        const t = ceilSeconds(resetMs);
        return {
          'ratelimit-policy': `"requests";q=${requests};w=${w}, "tokens";q=${tokens};w=${w}`,
          ratelimit: `"requests";r=${leftRequests};t=${t}, "tokens";r=${leftTokens};t=${t}`,
        };
      }
    }
  }

  function refused(headers: Record<string, string>, waitMs: number): UpstreamAnswer {
    const status = dialect === 'github-secondary' ? 403 : 429;
    const retry: Record<string, string> =
      dialect === 'github' ? {} : { 'retry-after': String(Math.max(1, ceilSeconds(waitMs))) };
    if (dialect === 'openai') retry['retry-after-ms'] = String(Math.max(0, Math.ceil(waitMs)));
    return { status, headers: { ...headers, ...retry }, tokens: 0 };
  }

  return {
    /** Answers a request for `cost` tokens arriving at `nowMs`, with `inFlight` others being answered. */
    answer(cost: number, nowMs: number, inFlight = 0): UpstreamAnswer {
      const current = Math.floor((nowMs - startMs) / windowMs);
      if (current !== window) {
        window = current;
        usedRequests = 0;
        usedTokens = 0;
      }
      if (options.concurrency !== undefined && inFlight >= options.concurrency) {
        return refused(budgetHeaders(nowMs), 1000);
      }
      if (usedRequests + 1 > requests || usedTokens + cost > tokens) {
        return refused(budgetHeaders(nowMs), startMs + (window + 1) * windowMs - nowMs);
      }
      usedRequests += 1;
      usedTokens += cost;
      primaryUsed += 1;
      return { status: 200, headers: budgetHeaders(nowMs), tokens: cost };
    },
  };
}

export type HiddenLimit = ReturnType<typeof createHiddenLimit>;
