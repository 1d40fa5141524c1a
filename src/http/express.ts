/**
 * Express middleware (Express 4.18+ and 5). The client address is `req.ip`, so Express's own
 * `trust proxy` setting decides whether `X-Forwarded-For` is believed.
 *
 * @example
 * import express from 'express';
 * import { createLimiter } from 'floodgate';
 * import { rateLimit } from 'floodgate/express';
 *
 * const app = express();
 * app.use(rateLimit({ limiter: createLimiter({ rules: { algorithm: 'sliding-window', limit: 120, window: '1m' } }) }));
 * // A stricter limit for one router: mount another rateLimit on it.
 * const auth = express.Router();
 * auth.use(rateLimit({ rules: { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' } }));
 * app.use('/auth', auth);
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
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

export type { HeaderStyle } from './headers.js';
export { type ApiKeyOrAddressOptions, apiKeyOrAddress } from './known-key.js';

declare module 'express-serve-static-core' {
  interface Request {
    /** The decision of the last floodgate `rateLimit` that checked this request (the more restrictive of several). */
    rateLimit?: Decision;
  }
}

export interface RateLimitOptions extends HttpOptions<Request, Response>, AdaptiveHttpOptions<Request> {
  /**
   * Replaces the default 429 response. The rate-limit headers, `Retry-After` and
   * `Cache-Control: no-store` are already set; this must send the response.
   */
  onLimited?: (req: Request, res: Response, decision: Decision) => void | Promise<void>;
}

/**
 * Creates an Express middleware that rate-limits every request passing through it.
 * @example app.use(rateLimit({ rules: { algorithm: 'gcra', limit: 10, window: '1s' }, headers: 'draft-10' }));
 */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const resolved = parseHttpOptions<Request, Response>(options, 'rateLimit', [
    'onLimited',
    ...ADAPTIVE_OPTIONS,
  ]);
  const admit = admitter<Request>(options.adaptive, options.criticality, 'rateLimit');
  const onLimited = optionalFunction(options.onLimited, 'onLimited');
  const guard = createGuard(resolved, {
    header: (req, name) => nodeHeader(req.headers, name),
    address: (req) => req.ip,
  });

  /** What follows a decision; whatever fails here (a throwing `onLimited`) goes to next(error), as a failed check does. */
  function decided(req: Request, res: Response, next: NextFunction, decision: Decision | undefined): void {
    try {
      if (decision === undefined) {
        next();
        return;
      }
      req.rateLimit = moreRestrictive(req.rateLimit, decision);
      const headers = nodeHeaderTarget(res);
      if (guard.respond(decision, headers)) {
        trackUntilClosed(guard, req, decision, { raw: res, res, headers });
        next();
      } else if (onLimited !== undefined) {
        Promise.resolve(onLimited(req, res, decision)).catch(next);
      } else {
        const problem = guard.problem(decision);
        res.status(problem.status).type(PROBLEM_CONTENT_TYPE).send(problemBody(problem));
      }
    } catch (error) {
      next(error);
    }
  }

  return function floodgateRateLimit(req, res, next) {
    if (admit !== undefined) {
      const admission = admit(req);
      if (admission === SHED) return shedNodeResponse(res, req);
      holdUntilClosed(admission, res);
    }
    // Express 4 ignores a returned promise, so failures (a store outage) go to next(error) here.
    // One `then` rather than an async function and its `catch`: this runs once per request.
    guard.check(req).then((decision) => decided(req, res, next, decision), next);
  };
}
