/**
 * The upstream header dialects the scheduler reads: the IETF RateLimit fields and the vendor
 * headers of OpenAI (and the APIs that copy it), Anthropic and GitHub. Each turns a response's
 * status and headers into an `UpstreamReading`; none throws, whatever the headers hold.
 */
import {
  clampCount,
  clampWait,
  readCount,
  readGoDuration,
  readRetryAfter,
  readRfc3339,
  waitUntil,
} from './header-values.js';
import {
  parseSfDictionary,
  parseSfItem,
  parseSfList,
  type SfBare,
  type SfMember,
} from './structured-parse.js';
import { createReading, type HeaderLookup, type UpstreamReading } from './upstream-reading.js';

export type DialectReader = (get: HeaderLookup, status: number, nowMs: number) => UpstreamReading | undefined;

/** The statuses whose Retry-After asks a client to hold off (RFC 6585, RFC 9110 §15.6.4). */
export const PAUSING: ReadonlySet<number> = new Set([429, 503]);

function nonNegativeInteger(bare: SfBare | undefined): number | undefined {
  return bare?.type === 'integer' ? clampCount(bare.value) : undefined;
}

function seconds(count: number | undefined): number | undefined {
  return count === undefined ? undefined : clampWait(count * 1000);
}

/** `RateLimit-Policy` quotas by policy name (draft-10 items named by a String or Token). */
function policyQuotas(members: SfMember[] | undefined): Map<string, number> {
  const quotas = new Map<string, number>();
  for (const member of members ?? []) {
    if (!('value' in member) || (member.value.type !== 'string' && member.value.type !== 'token')) continue;
    const quota = nonNegativeInteger(member.params.get('q'));
    if (quota !== undefined && !quotas.has(member.value.value)) quotas.set(member.value.value, quota);
  }
  return quotas;
}

/**
 * IETF RateLimit fields: draft-10 `RateLimit: "name";r=..;t=..` with `RateLimit-Policy:
 * "name";q=..;w=..` (budgets by policy name); draft-7's `RateLimit: limit=.., remaining=..,
 * reset=..` and draft-6's `RateLimit-Limit`/`-Remaining`/`-Reset` (the budget `requests`).
 */
function ietf(get: HeaderLookup, status: number, nowMs: number): UpstreamReading | undefined {
  const reading = createReading();
  const field = get('ratelimit');
  const current = parseSfList(field);
  if (current) {
    const quotas = policyQuotas(parseSfList(get('ratelimit-policy')));
    for (const member of current) {
      if (!('value' in member) || (member.value.type !== 'string' && member.value.type !== 'token')) continue;
      const remaining = nonNegativeInteger(member.params.get('r'));
      if (remaining === undefined) continue; // `r` is required; an item without it says nothing
      const resetMs = seconds(nonNegativeInteger(member.params.get('t')));
      reading.budget(member.value.value, { remaining, resetMs, limit: quotas.get(member.value.value) });
    }
  } else {
    const combined = parseSfDictionary(field);
    const entry = (name: string) => {
      const member = combined?.get(name);
      return member && 'value' in member ? nonNegativeInteger(member.value) : undefined;
    };
    reading.budget('requests', {
      limit: entry('limit'),
      remaining: entry('remaining'),
      resetMs: seconds(entry('reset')),
    });
  }
  if (!reading.has('requests')) {
    const item = (name: string) => nonNegativeInteger(parseSfItem(get(name))?.value);
    reading.budget('requests', {
      limit: item('ratelimit-limit'),
      remaining: item('ratelimit-remaining'),
      resetMs: seconds(item('ratelimit-reset')),
    });
  }
  if (PAUSING.has(status)) reading.pause(readRetryAfter(get, nowMs));
  return reading.done();
}

/** OpenAI: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go durations; Azure's `-1` is unknown. */
function openai(get: HeaderLookup, status: number, nowMs: number): UpstreamReading | undefined {
  const reading = createReading();
  for (const name of ['requests', 'tokens']) {
    reading.budget(name, {
      limit: readCount(get(`x-ratelimit-limit-${name}`)),
      remaining: readCount(get(`x-ratelimit-remaining-${name}`)),
      resetMs: readGoDuration(get(`x-ratelimit-reset-${name}`)),
    });
  }
  if (PAUSING.has(status)) reading.pause(readRetryAfter(get, nowMs));
  return reading.done();
}

const ANTHROPIC_BUDGETS = ['requests', 'tokens', 'input-tokens', 'output-tokens'];
/** Anthropic's 529 (overloaded) may carry a Retry-After too. */
const ANTHROPIC_PAUSING = new Set([...PAUSING, 529]);

/** Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`, resets in RFC 3339. */
function anthropic(get: HeaderLookup, status: number, nowMs: number): UpstreamReading | undefined {
  const reading = createReading();
  for (const name of ANTHROPIC_BUDGETS) {
    reading.budget(name, {
      limit: readCount(get(`anthropic-ratelimit-${name}-limit`)),
      remaining: readCount(get(`anthropic-ratelimit-${name}-remaining`)),
      resetMs: waitUntil(readRfc3339(get(`anthropic-ratelimit-${name}-reset`)), nowMs),
    });
  }
  if (ANTHROPIC_PAUSING.has(status)) reading.pause(readRetryAfter(get, nowMs));
  return reading.done();
}

/** GitHub's advice for a secondary limit that names no time: wait at least a minute. */
const GITHUB_SECONDARY_WAIT_MS = 60_000;

/**
 * GitHub: `x-ratelimit-limit`, `-remaining` (else limit minus `-used`), `-reset` in epoch
 * seconds, as the budget `requests` (`-resource` is not read: give each resource its own key).
 * A 403 or 429 pauses for its `retry-after`, else until the reset when nothing remains, else
 * (429 only: a 403 may be a permission error) a minute.
 */
function github(get: HeaderLookup, status: number, nowMs: number): UpstreamReading | undefined {
  const reading = createReading();
  const limit = readCount(get('x-ratelimit-limit'));
  const used = readCount(get('x-ratelimit-used'));
  const remaining =
    readCount(get('x-ratelimit-remaining')) ??
    (limit !== undefined && used !== undefined ? Math.max(0, limit - used) : undefined);
  const reset = readCount(get('x-ratelimit-reset'));
  const resetMs = reset === undefined ? undefined : waitUntil(reset * 1000, nowMs);
  reading.budget('requests', { limit, remaining, resetMs });
  if (status === 403 || status === 429) {
    const explicit = readRetryAfter(get, nowMs);
    if (explicit !== undefined) reading.pause(explicit);
    else if (remaining === 0 && resetMs !== undefined) reading.pause(resetMs);
    else if (status === 429) reading.pause(GITHUB_SECONDARY_WAIT_MS);
  } else if (status === 503) {
    reading.pause(readRetryAfter(get, nowMs));
  }
  return reading.done();
}

export const DIALECT_READERS = { ietf, openai, anthropic, github } as const satisfies Record<
  string,
  DialectReader
>;
