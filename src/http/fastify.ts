/**
 * Fastify plugin (Fastify 4 and 5). Registered with `skip-override` (what `fastify-plugin`
 * does), so its hook applies to every route of the instance it is registered on. The client
 * address is `request.ip`, so Fastify's own `trustProxy` decides whether `X-Forwarded-For` is
 * believed.
 *
 * Per-route limits: `config: { rateLimit: { ...options } }` adds a route limiter after the
 * app-wide one (it inherits every app option except the limiter, and by default gets its own
 * key prefix so its counts are its own); `config: { rateLimit: false }` exempts a route.
 *
 * @example
 * import Fastify from 'fastify';
 * import { floodgate } from 'floodgate/fastify';
 *
 * const app = Fastify({ trustProxy: 1 });
 * await app.register(floodgate, { rules: { name: 'minute', algorithm: 'sliding-window', limit: 120, window: '1m' } });
 * app.post('/login', { config: { rateLimit: { rules: { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' } } } }, login);
 * app.get('/health', { config: { rateLimit: false } }, () => 'ok');
 */
import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  RouteOptions,
} from 'fastify';
import type { Decision } from '../core/decision.js';
import { describe } from '../describe.js';
import {
  type AdaptiveHttpOptions,
  admitter,
  bodyPending,
  holdUntilClosed,
  SHED,
  SHED_HEADERS,
  SHED_PROBLEM,
} from './adaptive.js';
import {
  createGuard,
  type Guard,
  moreRestrictive,
  nodeHeader,
  problemBody,
  replyTarget,
  trackUntilClosed,
} from './guard.js';
import {
  type HttpOptions,
  optionalFunction,
  parseHttpOptions,
  parseRequestOptions,
  scopedPrefix,
} from './options.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

export type { HeaderStyle } from './headers.js';
export { type ApiKeyOrAddressOptions, apiKeyOrAddress } from './known-key.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The decision of the floodgate limiter(s) that checked this request (the more restrictive of several). */
    rateLimit?: Decision;
  }
  interface FastifyContextConfig {
    /** A route's own limiter (added to the app-wide one), or `false` to exempt the route. */
    rateLimit?: FloodgateRouteOptions | false;
  }
}

/** The request hook the limiter runs in. */
export type FloodgateHook = 'onRequest' | 'preHandler';

export interface FloodgateRouteOptions extends HttpOptions<FastifyRequest, FastifyReply> {
  /**
   * `'onRequest'` (default): before anything else runs, the cheapest place to turn a request
   * away. `'preHandler'`: after the other hooks, e.g. authentication, so `key` and `plan` can
   * read what they put on the request (`request.user`); the body has been parsed by then.
   */
  hook?: FloodgateHook;
  /**
   * Replaces the default 429 response. The rate-limit headers, `Retry-After` and
   * `Cache-Control: no-store` are already set; this must send the response (`reply.send`).
   */
  onLimited?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => void | Promise<void>;
}

export interface FloodgateOptions extends FloodgateRouteOptions, AdaptiveHttpOptions<FastifyRequest> {
  /**
   * `true` (default): limit every route of the instance. `false`: only routes with
   * `config.rateLimit`; then `limiter`/`rules` are optional and only lend routes their store.
   */
  global?: boolean;
}

const ROUTE_OPTIONS = ['onLimited', 'hook'];
const HOOKS: readonly FloodgateHook[] = ['onRequest', 'preHandler'];

/**
 * Routes whose `config.rateLimit` a registration has already applied: when floodgate is
 * registered more than once (an outer and an inner scope), only the first applies it, so a
 * route limiter never counts a request twice.
 */
const claimedRoutes = new WeakSet<object>();

interface RouteGuard {
  guard: Guard<FastifyRequest, FastifyReply>;
  onLimited: FloodgateRouteOptions['onLimited'];
  hook: FloodgateHook;
}

function parseHook(value: unknown, adapter: string): FloodgateHook {
  if (value === undefined) return 'onRequest';
  if (!HOOKS.includes(value as FloodgateHook)) {
    throw new RangeError(`${adapter} hook: ${describe(value)} must be 'onRequest' or 'preHandler'`);
  }
  return value as FloodgateHook;
}

function buildRouteGuard(options: FloodgateRouteOptions, adapter: string): RouteGuard {
  const resolved = parseHttpOptions<FastifyRequest, FastifyReply>(options, adapter, ROUTE_OPTIONS);
  return {
    guard: createGuard(resolved, {
      header: (request, name) => nodeHeader(request.headers, name),
      address: (request) => request.ip,
    }),
    onLimited: optionalFunction(options.onLimited, 'onLimited'),
    hook: parseHook(options.hook, adapter),
  };
}

async function limit({ guard, onLimited }: RouteGuard, request: FastifyRequest, reply: FastifyReply) {
  const decision = await guard.check(request);
  if (decision === undefined) return;
  request.rateLimit = moreRestrictive(request.rateLimit, decision);
  const headers = replyTarget(reply);
  if (guard.respond(decision, headers)) {
    trackUntilClosed(guard, request, decision, { raw: reply.raw, res: reply, headers });
    return;
  }
  if (onLimited !== undefined) await onLimited(request, reply, decision);
  else {
    const problem = guard.problem(decision);
    reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(problemBody(problem));
  }
  return reply;
}

function admitOrShed(
  admit: NonNullable<ReturnType<typeof admitter<FastifyRequest>>>,
  request: FastifyRequest,
  reply: FastifyReply,
  done: () => void,
): void {
  const admission = admit(request);
  if (admission !== SHED) {
    holdUntilClosed(admission, reply.raw);
    done();
    return;
  }
  if (bodyPending(request.raw)) reply.header('connection', 'close');
  reply.code(503).headers(SHED_HEADERS).send(SHED_PROBLEM);
}

/** The key prefix of a route's own limiter: readable, or a digest when the URL does not fit. */
function routePrefix(base: string, route: RouteOptions): string {
  const methods = (Array.isArray(route.method) ? route.method : [route.method]).join('+');
  return scopedPrefix(base, `${methods}:${route.url}`, `${methods} ${route.url}`);
}

async function floodgatePlugin(app: FastifyInstance, options: FloodgateOptions): Promise<void> {
  const { global = true, adaptive, criticality, ...shared } = options ?? {};
  if (typeof global !== 'boolean') {
    throw new TypeError(`floodgate global: expected true or false, got ${describe(global)}`);
  }
  const appGuard =
    global || shared.limiter !== undefined || shared.rules !== undefined
      ? buildRouteGuard(shared, 'floodgate')
      : undefined;
  if (appGuard === undefined) {
    parseRequestOptions(shared, 'floodgate', ROUTE_OPTIONS);
    parseHook(shared.hook, 'floodgate');
  }
  const baseLimiter = appGuard?.guard.limiter;
  const { limiter: _limiter, rules: _rules, store: _store, prefix: _prefix, ...inherited } = shared;
  // One guard per route options object and URL: Fastify's automatic HEAD route shares its GET's.
  const routeGuards = new WeakMap<object, Map<string, RouteGuard>>();

  function routeGuard(config: FloodgateRouteOptions, route: RouteOptions): RouteGuard {
    if (typeof config !== 'object' || config === null) {
      throw new TypeError(
        `config.rateLimit of ${route.url}: expected route options such as { rules } or false, got ${describe(config)}`,
      );
    }
    let byUrl = routeGuards.get(config);
    if (byUrl === undefined) {
      byUrl = new Map();
      routeGuards.set(config, byUrl);
    }
    let built = byUrl.get(route.url);
    if (built === undefined) {
      const merged: FloodgateRouteOptions = { ...inherited, ...config };
      if (merged.limiter === undefined) {
        if (merged.store === undefined && baseLimiter !== undefined) merged.store = baseLimiter.store;
        merged.prefix ??= routePrefix(baseLimiter?.prefix ?? 'floodgate', route);
      }
      built = buildRouteGuard(merged, `config.rateLimit of ${route.url}`);
      byUrl.set(route.url, built);
    }
    return built;
  }

  if (!app.hasRequestDecorator('rateLimit')) app.decorateRequest('rateLimit', undefined);
  const admit = admitter<FastifyRequest>(adaptive, criticality, 'floodgate');
  // Before the limiter's own hook (added below or by routes): a request to shed costs no store call.
  if (admit !== undefined)
    app.addHook('onRequest', (request, reply, done) => admitOrShed(admit, request, reply, done));

  app.addHook('onRoute', function floodgateOnRoute(route) {
    const config = route.config?.rateLimit;
    if (config === undefined || config === false || claimedRoutes.has(route)) return;
    claimedRoutes.add(route);
    const guard = routeGuard(config, route);
    const hook: onRequestHookHandler = function floodgateRouteLimit(request, reply) {
      return limit(guard, request, reply);
    };
    const existing = route[guard.hook];
    route[guard.hook] =
      existing === undefined ? [hook] : [...(Array.isArray(existing) ? existing : [existing]), hook];
  });

  if (global && appGuard !== undefined) {
    const guard = appGuard;
    // Both hooks take (request, reply) and may return a promise.
    app.addHook(guard.hook as 'onRequest', function floodgateLimit(request, reply) {
      if (request.routeOptions.config?.rateLimit === false) return Promise.resolve();
      return limit(guard, request, reply);
    });
  }
}

/**
 * The Fastify plugin: `await app.register(floodgate, { limiter })`.
 * @example await app.register(floodgate, { rules: { algorithm: 'token-bucket', limit: 10, window: '1s', burst: 20 }, headers: ['draft-10', 'legacy'] });
 */
export const floodgate: FastifyPluginAsync<FloodgateOptions> = Object.assign(floodgatePlugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'floodgate',
  [Symbol.for('plugin-meta')]: { name: 'floodgate', fastify: '>=4' },
});
