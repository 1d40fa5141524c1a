/**
 * Fetch API (`Headers`, `Response`) pieces shared by the adapters of Fetch-style frameworks
 * (the fetch guard, Hono): where headers go, the default 429 and adding headers to a response
 * whose headers may be immutable (as a `fetch()` result's are).
 */
import type { Decision } from '../core/decision.js';
import { type Guard, problemBody } from './guard.js';
import type { HeaderTarget } from './headers.js';
import type { AfterResponse } from './outcome.js';
import { PROBLEM_CONTENT_TYPE, type QuotaExceededProblem } from './problem.js';

/** A HeaderTarget over a `Headers` object. */
export function headersTarget(headers: Headers): HeaderTarget {
  return {
    get: (name) => headers.get(name) ?? undefined,
    set: (name, value) => headers.set(name, value),
  };
}

/** The default denial: the problem document, with `headers` (the rate-limit and denial headers). */
export function problemResponse(problem: QuotaExceededProblem, headers: Headers): Response {
  const response = new Response(problemBody(problem), { status: problem.status, headers });
  response.headers.set('Content-Type', PROBLEM_CONTENT_TYPE);
  return response;
}

/** Runs `write` on `response`'s headers, or on a copy (same status and body) when they are immutable. */
export function writeHeaders(response: Response, write: (headers: Headers) => void): Response {
  try {
    write(response.headers);
    return response;
  } catch (error) {
    // Immutable headers throw on the first write, before anything was written.
    if (!(error instanceof TypeError)) throw error;
    const copy = new Response(response.body, response);
    write(copy.headers);
    return copy;
  }
}

/** `response` with every one of `headers` set on it, or with `keepOwn` only those it lacks. */
export function withHeaders(response: Response, headers: Headers, keepOwn = false): Response {
  return writeHeaders(response, (target) => {
    for (const [name, value] of headers) if (!(keepOwn && target.has(name))) target.set(name, value);
  });
}

/**
 * Rewrites `decision`'s headers on `target` to show it as settled, when `response` (whole,
 * status and headers, before it is sent) tells how it will be.
 */
export function settleWebHeaders<Req>(
  guard: Guard<Req, Response>,
  decision: Decision,
  response: Response,
  target: HeaderTarget,
): void {
  guard.settleHeaders?.(
    decision,
    { status: response.status, field: (name) => response.headers.get(name) ?? undefined },
    target,
  );
}

/**
 * `response` tracked until its body has been sent: a copy whose body calls `done` once it has
 * been read to its end (with the status and headers; a Fetch `Response` carries no trailers),
 * or failed or been cancelled (`undefined`: cut short).
 */
export function trackedUntilSent(response: Response, done: AfterResponse<Response>): Response {
  const finished = () =>
    done({
      res: response,
      status: response.status,
      field: (name) => response.headers.get(name) ?? undefined,
    });
  const source = response.body;
  if (source === null) {
    finished();
    return response;
  }
  const reader = source.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: read, value } = await reader.read();
        if (!read) return controller.enqueue(value);
        finished();
        controller.close();
      } catch (error) {
        done(undefined);
        controller.error(error);
      }
    },
    cancel(reason) {
      done(undefined);
      return reader.cancel(reason);
    },
  });
  return new Response(body, response);
}
