/**
 * A guard for Fetch API servers (Hono, Bun, Deno, Cloudflare Workers, Next.js route handlers):
 * `Request` in, a 429 `Response` or `null` (allowed) out.
 *
 * A `Request` does not carry the client's address: pass it per call (`guard(request, { ip })`,
 * e.g. Bun's `server.requestIP(req)`, Deno's `info.remoteAddr`, Hono's `getConnInfo(c)`), or
 * give an `ip(request)` option. `trustProxy` then says which `X-Forwarded-For` hops to believe.
 * Without an address (or a known API key), requests share the single key `ip:unknown`.
 *
 * @example
 * import { createFetchGuard } from 'floodgate/fetch';
 * const guard = createFetchGuard({ rules: { algorithm: 'gcra', limit: 10, window: '1s' } });
 * export default {
 *   async fetch(request, server) {
 *     const limited = await guard(request, { ip: server.requestIP(request)?.address });
 *     if (limited) return limited;
 *     return guard.withHeaders(request, new Response('hello'));
 *   },
 * };
 */
import type { Decision } from '../core/decision.js';
import { createGuard } from './guard.js';
import { type HttpOptions, optionalFunction, parseHttpOptions } from './options.js';
import type { AfterResponse } from './outcome.js';
import { clientAddress, parseTrustProxy, type TrustProxy } from './proxy.js';
import {
  headersTarget,
  problemResponse,
  settleWebHeaders,
  trackedUntilSent,
  withHeaders,
  writeHeaders,
} from './web.js';

export type { HeaderStyle } from './headers.js';
export { type ApiKeyOrAddressOptions, apiKeyOrAddress } from './known-key.js';
export type { TrustProxy } from './proxy.js';

/** What the server knows about the connection a request came on. */
export interface FetchContext {
  /** The peer address of the connection. */
  ip?: string | undefined;
}

/** `res` of `requestWasSuccessful` and `settle` is the `Response` passed to `withHeaders`. */
export interface FetchGuardOptions extends HttpOptions<Request, Response> {
  /** The peer address of a request when the call gives none, e.g. `(req) => req.headers.get('cf-connecting-ip')`. */
  ip?: (request: Request) => string | null | undefined;
  /** Which `X-Forwarded-For` hops to believe (see `createHttpGuard`). Default `false`. */
  trustProxy?: TrustProxy;
  /**
   * Replaces the default 429 response. Rate-limit headers, `Retry-After` and
   * `Cache-Control: no-store` are added to the returned response unless it sets them itself.
   */
  onLimited?: (request: Request, decision: Decision) => Response | Promise<Response>;
}

export interface FetchGuard {
  /** Checks `request`: a 429 response when it is denied, `null` when it may proceed. */
  (request: Request, context?: FetchContext): Promise<Response | null>;
  /** The decision made for `request`, if it was checked and not skipped. */
  decisionFor(request: Request): Decision | undefined;
  /**
   * `response` with the rate-limit headers of `request`'s decision added (a copy when its
   * headers are immutable, as for a `fetch()` result). With concurrency rules, the request's
   * slots are held until this response's body has been sent or cancelled (or the request is
   * aborted), and `skipFailedRequests`, `skipSuccessfulRequests` and `settle` act once it has:
   * pass every response of an allowed request through here.
   */
  withHeaders(request: Request, response: Response): Response;
}

/**
 * Creates a guard for Fetch API handlers.
 * @example const limited = await guard(request, { ip }); if (limited) return limited;
 */
export function createFetchGuard(options: FetchGuardOptions): FetchGuard {
  const resolved = parseHttpOptions<Request, Response>(options, 'createFetchGuard', [
    'ip',
    'trustProxy',
    'onLimited',
  ]);
  const ip = optionalFunction(options.ip, 'ip');
  const trust = parseTrustProxy(options.trustProxy);
  const onLimited = optionalFunction(options.onLimited, 'onLimited');
  // The peer of each request being checked, read by `address` below during `check`.
  const peers = new WeakMap<Request, string | undefined>();
  const decisions = new WeakMap<Request, Decision>();
  // Requests tracked (concurrency slots, settling) until their response is done.
  const tracked = new WeakMap<Request, AfterResponse<Response>>();
  const guard = createGuard(resolved, {
    header: (request, name) => request.headers.get(name) ?? undefined,
    address: (request) =>
      clientAddress(peers.get(request), request.headers.get('x-forwarded-for') ?? undefined, trust),
  });

  async function floodgateFetchGuard(request: Request, context?: FetchContext): Promise<Response | null> {
    peers.set(request, context?.ip ?? ip?.(request) ?? undefined);
    const decision = await guard.check(request);
    if (decision === undefined) return null;
    decisions.set(request, decision);
    const headers = new Headers();
    if (guard.respond(decision, headersTarget(headers))) {
      const done = guard.track(request, decision);
      if (done !== undefined) {
        tracked.set(request, done);
        request.signal.addEventListener('abort', () => done(undefined), { once: true });
      }
      return null;
    }
    if (onLimited === undefined) return problemResponse(guard.problem(decision), headers);
    return withHeaders(await onLimited(request, decision), headers, true);
  }

  return Object.assign(floodgateFetchGuard, {
    decisionFor: function decisionFor(request: Request) {
      return decisions.get(request);
    },
    withHeaders: function withDecisionHeaders(request: Request, response: Response) {
      const decision = decisions.get(request);
      if (decision === undefined) return response;
      const done = tracked.get(request);
      tracked.delete(request);
      const sent = done === undefined ? response : trackedUntilSent(response, done);
      // Merged with what the response carries, e.g. another guard's headers (see headers.ts).
      return writeHeaders(sent, (target) => {
        const headers = headersTarget(target);
        guard.respond(decision, headers);
        if (done !== undefined) settleWebHeaders(guard, decision, sent, headers);
      });
    },
  });
}
