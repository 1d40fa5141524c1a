/**
 * Hono middleware, on every runtime Hono runs on (its module graph imports nothing from `node:`).
 * The decision is `c.get('rateLimit')`. The client address is the socket peer on
 * `@hono/node-server` (what its `getConnInfo` reads); elsewhere give `ip`, e.g. the platform's
 * `getConnInfo` or a header the platform sets. `trustProxy` says which `X-Forwarded-For` hops
 * to believe.
 *
 * Rate-limit headers are added to whatever response the handler returns; with several
 * `rateLimit` middlewares on one route, the outermost adds them all, the list fields in the
 * order the middlewares ran.
 *
 * @example
 * import { Hono } from 'hono';
 * import { rateLimit } from 'floodgate/hono';
 *
 * const app = new Hono();
 * app.use(rateLimit({ rules: { algorithm: 'sliding-window', limit: 120, window: '1m' } }));
 * app.get('/', (c) => c.json({ remaining: c.get('rateLimit')?.remaining }));
 */
import type { Context, MiddlewareHandler } from 'hono';
import { endAdmission } from '../adaptive/ending.js';
import type { Decision } from '../core/decision.js';
import {
  ADAPTIVE_OPTIONS,
  type AdaptiveHttpOptions,
  admitter,
  SHED,
  SHED_HEADERS,
  SHED_PROBLEM,
} from './adaptive.js';
import { createGuard, moreRestrictive } from './guard.js';
import { type HttpOptions, optionalFunction, parseHttpOptions } from './options.js';
import { clientAddress, parseTrustProxy, type TrustProxy } from './proxy.js';
import { headersTarget, problemResponse, settleWebHeaders, trackedUntilSent, withHeaders } from './web.js';

export type { HeaderStyle } from './headers.js';
export { type ApiKeyOrAddressOptions, apiKeyOrAddress } from './known-key.js';
export type { TrustProxy } from './proxy.js';

declare module 'hono' {
  interface ContextVariableMap {
    /** The decision of the floodgate `rateLimit` that checked this request (the more restrictive of several). */
    rateLimit?: Decision;
  }
}

/** `res` of `requestWasSuccessful` and `settle` is the handler's `Response` (`c.res`). */
export interface RateLimitOptions extends HttpOptions<Context, Response>, AdaptiveHttpOptions<Context> {
  /**
   * The client's address (before `trustProxy`). Default: the socket peer on `@hono/node-server`.
   * On other runtimes, e.g. `(c) => getConnInfo(c).remote.address` with the runtime's
   * `getConnInfo` (`hono/bun`, `hono/deno`, `hono/cloudflare-workers`), or
   * `(c) => c.req.header('cf-connecting-ip')`.
   */
  ip?: (c: Context) => string | null | undefined;
  /** Which `X-Forwarded-For` hops to believe (see `createHttpGuard`). Default `false`. */
  trustProxy?: TrustProxy;
  /**
   * Replaces the default 429 response. Rate-limit headers, `Retry-After` and
   * `Cache-Control: no-store` are added to the returned response unless it sets them itself.
   */
  onLimited?: (c: Context, decision: Decision) => Response | Promise<Response>;
}

/** The socket peer on `@hono/node-server`, from its documented bindings (`c.env.incoming`). */
function nodePeer(c: Context): string | undefined {
  const env = c.env as { incoming?: NodeBinding; server?: { incoming?: NodeBinding } } | undefined;
  const address = (env?.server?.incoming ?? env?.incoming)?.socket?.remoteAddress;
  return typeof address === 'string' ? address : undefined;
}

interface NodeBinding {
  socket?: { remoteAddress?: unknown };
}

/**
 * Per request: the headers of its decisions, added to its response by the outermost middleware,
 * and whether a middleware already answered with them (a 429, or `onLimited`'s response).
 */
const pending = new WeakMap<Request, { headers: Headers; answered: boolean }>();

/**
 * Creates a Hono middleware that rate-limits every request passing through it.
 * @example app.use('/api/*', rateLimit({ limiter, ip: (c) => c.req.header('cf-connecting-ip') }));
 */
export function rateLimit(options: RateLimitOptions): MiddlewareHandler {
  const resolved = parseHttpOptions<Context, Response>(options, 'rateLimit', [
    'ip',
    'trustProxy',
    'onLimited',
    ...ADAPTIVE_OPTIONS,
  ]);
  const admit = admitter<Context>(options.adaptive, options.criticality, 'rateLimit');
  const ip = optionalFunction(options.ip, 'ip');
  const trust = parseTrustProxy(options.trustProxy);
  const onLimited = optionalFunction(options.onLimited, 'onLimited');
  const guard = createGuard(resolved, {
    header: (c, name) => c.req.header(name),
    address: (c) =>
      clientAddress(
        ip === undefined ? nodePeer(c) : (ip(c) ?? undefined),
        c.req.header('x-forwarded-for'),
        trust,
      ),
  });

  const limited: MiddlewareHandler = async function limited(c, next) {
    const decision = await guard.check(c);
    if (decision === undefined) return next();
    c.set('rateLimit', moreRestrictive(c.get('rateLimit'), decision));
    const request = c.req.raw;
    let state = pending.get(request);
    const outermost = state === undefined;
    if (state === undefined) {
      state = { headers: new Headers(), answered: false };
      pending.set(request, state);
    }
    const { headers } = state;
    try {
      if (!guard.respond(decision, headersTarget(headers))) {
        state.answered = true;
        if (onLimited === undefined) return problemResponse(guard.problem(decision), headers);
        return withHeaders(await onLimited(c, decision), headers, true);
      }
      // Tracked (slots held, settling pending) until the response body is sent, or the request aborts or fails.
      const done = guard.track(c, decision);
      if (done !== undefined) request.signal.addEventListener('abort', () => done(undefined), { once: true });
      try {
        await next();
      } catch (error) {
        done?.(undefined);
        throw error;
      }
      if (done !== undefined) {
        settleWebHeaders(guard, decision, c.res, headersTarget(headers));
        c.res = trackedUntilSent(c.res, done);
      }
      if (outermost && !state.answered) c.res = withHeaders(c.res, headers);
    } finally {
      // A Request object handled again (app.request with the same one) starts afresh.
      if (outermost) pending.delete(request);
    }
  };

  if (admit === undefined) return limited;
  return async function floodgateRateLimit(c, next) {
    const admission = admit(c);
    // Web runtimes read no body the handler does not ask for: nothing to close.
    if (admission === SHED) return new Response(SHED_PROBLEM, { status: 503, headers: SHED_HEADERS });
    const startedAt = performance.now();
    try {
      const answer = await limited(c, next);
      endAdmission(admission, (answer ?? c.res).status, performance.now() - startedAt);
      return answer;
    } catch (error) {
      admission.ignore();
      throw error;
    }
  };
}
