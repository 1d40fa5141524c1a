/**
 * The body of a denial (a 429, or a 403 for blocked keys under `blockedStatus: 403`): an RFC 9457 problem document with the `quota-exceeded` problem type from
 * draft-ietf-httpapi-ratelimit-headers, naming the policies that denied the request and when to
 * retry. Nothing from the request is echoed back.
 */
import type { Decision } from '../core/decision.js';
import { retryAfterSeconds } from './headers.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

/** The statuses a denial can be answered with (see the `blockedStatus` option). */
export type DenialStatus = 403 | 429;

const TITLES = { 403: 'Forbidden', 429: 'Too Many Requests' } as const;

/** The members of the default denial body. */
export interface QuotaExceededProblem {
  type: typeof QUOTA_EXCEEDED_TYPE;
  title: (typeof TITLES)[DenialStatus];
  status: DenialStatus;
  detail: string;
  /** Names of the rules that denied the request. */
  'violated-policies': string[];
  /** Seconds until the request may pass, as in `Retry-After`; absent when it never can. */
  'retry-after'?: number;
}

/** The status of a denial: `blockedStatus` when the key is blocked, else 429. */
export function denialStatus(decision: Decision, blockedStatus: DenialStatus): DenialStatus {
  return decision.blocked === true ? blockedStatus : 429;
}

/** Builds the problem document for a denied decision, answered with `status` (default 429). */
export function quotaExceededProblem(decision: Decision, status: DenialStatus = 429): QuotaExceededProblem {
  const violated = decision.rules
    .filter((view) => !view.allowed && view.shadow !== true)
    .map((view) => view.rule);
  const names = violated.map((name) => `'${name}'`).join(', ');
  const retryAfter = retryAfterSeconds(decision);
  const problem: QuotaExceededProblem = {
    type: QUOTA_EXCEEDED_TYPE,
    title: TITLES[status],
    status,
    detail: describeDenial(decision, names, violated.length, retryAfter),
    'violated-policies': violated,
  };
  if (retryAfter !== undefined) problem['retry-after'] = retryAfter;
  return problem;
}

function describeDenial(
  decision: Decision,
  names: string,
  count: number,
  retryAfter: number | undefined,
): string {
  if (retryAfter === undefined) {
    return `This request costs more than policy '${decision.rule}' can ever admit (at most ${decision.limit}); it will never be allowed, so do not retry it.`;
  }
  const wait = `retry in ${retryAfter} second${retryAfter === 1 ? '' : 's'}`;
  // A denial by the limiter's `onStoreError: 'closed'` policy, not by anyone's usage.
  if (decision.degraded !== false) return `Rate limiting is temporarily unavailable; ${wait}.`;
  if (decision.blocked === true) {
    return `This client is blocked by ${count === 1 ? 'policy' : 'policies'} ${names}; ${wait}.`;
  }
  if (decision.inFlight !== undefined) {
    return `Too many requests in flight for policy '${decision.rule}' (at most ${decision.limit} at once); ${wait}.`;
  }
  return `Quota exceeded for ${count === 1 ? 'policy' : 'policies'} ${names}; ${wait}.`;
}
