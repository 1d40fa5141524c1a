/**
 * Koa middleware (Koa 2 and 3). The decision is `ctx.state.rateLimit`. The client address is
 * `ctx.ip`, so Koa's own `app.proxy` (and `maxIpsCount`, `proxyIpHeader`) decides whether
 * `X-Forwarded-For` is believed.
 *
 * @example
 * import Koa from 'koa';
 * import { rateLimit } from 'floodgate/koa';
 *
 * const app = new Koa();
 * app.use(rateLimit({ rules: { algorithm: 'sliding-window', limit: 120, window: '1m' } }));
 * app.use((ctx) => {
 *   ctx.body = { remaining: ctx.state.rateLimit?.remaining };
 * });
 */
import type { Context, Response as KoaResponse, Middleware } from 'koa';
import type { Decision } from '../core/decision.js';
import {
  ADAPTIVE_OPTIONS,
  type AdaptiveHttpOptions,
  admitter,
  bodyPending,
  holdUntilClosed,
  SHED,
  SHED_HEADERS,
  SHED_PROBLEM,
} from './adaptive.js';
import { createGuard, moreRestrictive, nodeHeader, problemBody, trackUntilClosed } from './guard.js';
import { nodeHeaderTarget } from './node-response.js';
import { type HttpOptions, optionalFunction, parseHttpOptions } from './options.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

export type { HeaderStyle } from './headers.js';
export { type ApiKeyOrAddressOptions, apiKeyOrAddress } from './known-key.js';

declare module 'koa' {
  interface DefaultState {
    /** The decision of the floodgate `rateLimit` that checked this request (the more restrictive of several). */
    rateLimit?: Decision;
  }
}

/** `res` of `requestWasSuccessful` and `settle` is `ctx.response`. */
export interface RateLimitOptions extends HttpOptions<Context, KoaResponse>, AdaptiveHttpOptions<Context> {
  /**
   * Replaces the default 429 response. The rate-limit headers, `Retry-After` and
   * `Cache-Control: no-store` are already set; this must set the response (`ctx.status`, `ctx.body`).
   */
  onLimited?: (ctx: Context, decision: Decision) => void | Promise<void>;
}

/**
 * Creates a Koa middleware that rate-limits every request passing through it.
 * @example router.post('/login', rateLimit({ rules: { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' } }), login);
 */
export function rateLimit(options: RateLimitOptions): Middleware {
  const resolved = parseHttpOptions<Context, KoaResponse>(options, 'rateLimit', [
    'onLimited',
    ...ADAPTIVE_OPTIONS,
  ]);
  const admit = admitter<Context>(options.adaptive, options.criticality, 'rateLimit');
  const onLimited = optionalFunction(options.onLimited, 'onLimited');
  const guard = createGuard(resolved, {
    header: (ctx, name) => nodeHeader(ctx.headers, name),
    address: (ctx) => ctx.ip,
  });

  return async function floodgateRateLimit(ctx, next) {
    if (admit !== undefined) {
      const admission = admit(ctx);
      if (admission === SHED) {
        ctx.status = 503;
        ctx.set(SHED_HEADERS);
        if (bodyPending(ctx.req)) ctx.set('Connection', 'close');
        ctx.body = SHED_PROBLEM;
        return;
      }
      holdUntilClosed(admission, ctx.res);
    }
    const decision = await guard.check(ctx);
    if (decision === undefined) return next();
    ctx.state.rateLimit = moreRestrictive(ctx.state.rateLimit, decision);
    const headers = nodeHeaderTarget(ctx.res);
    if (guard.respond(decision, headers)) {
      trackUntilClosed(guard, ctx, decision, { raw: ctx.res, res: ctx.response, headers });
      return next();
    }
    if (onLimited !== undefined) return onLimited(ctx, decision);
    const problem = guard.problem(decision);
    ctx.status = problem.status;
    ctx.set('Content-Type', PROBLEM_CONTENT_TYPE);
    ctx.body = problemBody(problem);
  };
}
