/**
 * Fetch API (`Headers`, `Response`) pieces shared by the adapters of Fetch-style frameworks
 * (the fetch guard, Hono): where headers go, the default 429 and adding headers to a response
 * whose headers may be immutable (as a `fetch()` result's are).
 */
import type { Decision } from '../core/decision.js';
import { problemBody } from './guard.js';
import type { HeaderTarget } from './headers.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

/** A HeaderTarget over a `Headers` object. */
export function headersTarget(headers: Headers): HeaderTarget {
  return {
    get: (name) => headers.get(name) ?? undefined,
    set: (name, value) => headers.set(name, value),
  };
}

/** The default 429: the problem document, with `headers` (the rate-limit and denial headers). */
export function problemResponse(decision: Decision, headers: Headers): Response {
  const response = new Response(problemBody(decision), { status: 429, headers });
  response.headers.set('Content-Type', PROBLEM_CONTENT_TYPE);
  return response;
}

/**
 * `response` with `headers` set on it: every one, or with `keepOwn` only those it does not set
 * itself. A copy (same status and body) when its headers are immutable.
 */
export function withHeaders(response: Response, headers: Headers, keepOwn = false): Response {
  let target = response;
  for (const [name, value] of headers) {
    if (keepOwn && target.headers.has(name)) continue;
    try {
      target.headers.set(name, value);
    } catch {
      // Immutable headers throw on the first write, before anything was written.
      target = new Response(target.body, target);
      target.headers.set(name, value);
    }
  }
  return target;
}
