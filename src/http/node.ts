/**
 * A guard for plain `node:http` (and `node:https`, and frameworks built on them without their
 * own adapter). The client address is the socket's peer unless `trustProxy` says which
 * `X-Forwarded-For` hops to believe.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { createHttpGuard } from 'floodgate/node';
 *
 * const guard = createHttpGuard({ rules: { algorithm: 'sliding-window', limit: 120, window: '1m' } });
 * createServer(async (req, res) => {
 *   if (!(await guard(req, res))) return; // 429 already sent
 *   res.end('hello');
 * }).listen(3000);
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from '../core/decision.js';
import {
  ADAPTIVE_OPTIONS,
  type AdaptiveHttpOptions,
  admitter,
  holdUntilClosed,
  SHED,
  shedNodeResponse,
} from './adaptive.js';
import { createGuard, moreRestrictive, nodeHeader, problemBody, trackUntilClosed } from './guard.js';
import { nodeHeaderTarget } from './node-response.js';
import { type HttpOptions, optionalFunction, parseHttpOptions } from './options.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';
import { clientAddress, parseTrustProxy, type TrustProxy } from './proxy.js';

export type { HeaderStyle } from './headers.js';
export { type ApiKeyOrAddressOptions, apiKeyOrAddress } from './known-key.js';
export type { TrustProxy } from './proxy.js';

/** A request that a guard has checked: its decision is `req.rateLimit`. */
export type RateLimitedRequest = IncomingMessage & { rateLimit?: Decision };

export interface HttpGuardOptions
  extends HttpOptions<IncomingMessage, ServerResponse>,
    AdaptiveHttpOptions<IncomingMessage> {
  /**
   * Which `X-Forwarded-For` hops to believe: `false` (default: none, the socket peer is the
   * client), a number of trusted proxy hops, addresses/CIDRs of trusted proxies (or
   * `'loopback'`, `'linklocal'`, `'uniquelocal'`), or `true` (all: only behind a proxy that
   * overwrites the header).
   */
  trustProxy?: TrustProxy;
  /**
   * Replaces the default 429 response. The rate-limit headers, `Retry-After` and
   * `Cache-Control: no-store` are already set; this must end the response.
   */
  onLimited?: (req: IncomingMessage, res: ServerResponse, decision: Decision) => void | Promise<void>;
}

/** Resolves `true` when the request may proceed; `false` when a 429 (or, with `adaptive`, a 503) was sent. */
export type HttpGuard = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/**
 * Creates a guard for node:http handlers. The decision is also set as `req.rateLimit`.
 * @example const guard = createHttpGuard({ limiter, trustProxy: 'loopback' });
 */
export function createHttpGuard(options: HttpGuardOptions): HttpGuard {
  const resolved = parseHttpOptions<IncomingMessage, ServerResponse>(options, 'createHttpGuard', [
    'trustProxy',
    'onLimited',
    ...ADAPTIVE_OPTIONS,
  ]);
  const admit = admitter<IncomingMessage>(options.adaptive, options.criticality, 'createHttpGuard');
  const trust = parseTrustProxy(options.trustProxy);
  const onLimited = optionalFunction(options.onLimited, 'onLimited');
  const guard = createGuard(resolved, {
    header: (req, name) => nodeHeader(req.headers, name),
    address: (req) =>
      clientAddress(req.socket.remoteAddress, nodeHeader(req.headers, 'x-forwarded-for'), trust),
  });

  return async function floodgateHttpGuard(req, res) {
    if (admit !== undefined) {
      const admission = admit(req);
      if (admission === SHED) {
        shedNodeResponse(res, req);
        return false;
      }
      holdUntilClosed(admission, res);
    }
    const decision = await guard.check(req);
    if (decision === undefined) return true;
    const checked = req as RateLimitedRequest;
    checked.rateLimit = moreRestrictive(checked.rateLimit, decision);
    const headers = nodeHeaderTarget(res);
    if (guard.respond(decision, headers)) {
      trackUntilClosed(guard, req, decision, { raw: res, res, headers });
      return true;
    }
    if (onLimited !== undefined) {
      await onLimited(req, res, decision);
    } else {
      const problem = guard.problem(decision);
      res.statusCode = problem.status;
      res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
      res.end(problemBody(problem));
    }
    return false;
  };
}
