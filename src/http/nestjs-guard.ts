/**
 * `FloodgateGuard`: a NestJS guard on the shared request path, for the Express and the Fastify
 * platforms alike (it reads `req.headers` and `req.ip`, so each platform's own trust-proxy
 * setting decides the client address). `@RateLimit(options)` gives a controller or route a
 * limiter of its own, added to the guard's; `@SkipRateLimit()` exempts one.
 */
import { type CanActivate, type ExecutionContext, HttpException, SetMetadata } from '@nestjs/common';
import type { Decision } from '../core/decision.js';
import {
  createGuard,
  type Guard,
  moreRestrictive,
  nodeHeader,
  replyTarget,
  trackUntilClosed,
} from './guard.js';
import type { HeaderTarget } from './headers.js';
import { type NodeResponse, nodeHeaderTarget } from './node-response.js';
import { type HttpOptions, optionalFunction, parseHttpOptions, scopedPrefix } from './options.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

/** What the guard reads from a request of either platform (Express `Request`, `FastifyRequest`). */
export interface FloodgateRequest {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly ip?: string | undefined;
  /** The decision of the floodgate limiter(s) that checked this request (the more restrictive of several). */
  rateLimit?: Decision;
}

/**
 * `res` of `requestWasSuccessful` and `settle`: the platform's response (Express `Response`,
 * Fastify `FastifyReply`).
 */
export interface RouteRateLimitOptions extends HttpOptions<FloodgateRequest, object> {
  /**
   * The error to throw instead of the default 429 `HttpException` (whose body is the problem
   * document), e.g. an exception an exception filter of yours renders. The rate-limit headers,
   * `Retry-After` and `Cache-Control: no-store` are already set on the response.
   */
  onLimited?: (context: ExecutionContext, decision: Decision) => Error;
}

/** Options of `new FloodgateGuard(options)`: the shared adapter options and `onLimited`. */
export type FloodgateGuardOptions = RouteRateLimitOptions;

const ROUTE_LIMIT = 'floodgate:rate-limit';
const SKIP = 'floodgate:skip';

/**
 * A controller's or route's own limiter, checked after the guard's: it inherits every guard
 * option except the limiter, and by default the guard's store with a key prefix of its own.
 * @example @RateLimit({ rules: { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' } })
 */
export function RateLimit(options: RouteRateLimitOptions): ClassDecorator & MethodDecorator {
  return SetMetadata(ROUTE_LIMIT, options);
}

/**
 * Exempts a controller or route from every `FloodgateGuard`.
 * @example @SkipRateLimit() @Get('health') health() { return 'ok'; }
 */
export function SkipRateLimit(): ClassDecorator & MethodDecorator {
  return SetMetadata(SKIP, true);
}

interface Checker {
  guard: Guard<FloodgateRequest, object>;
  onLimited: RouteRateLimitOptions['onLimited'];
}

/**
 * Decorator metadata of the first target that has it (handler, then class), as Nest's
 * `Reflector.getAllAndOverride` reads it: through reflect-metadata, which every Nest app loads.
 */
function metadata<T>(key: string, targets: readonly object[]): T | undefined {
  const reflect = Reflect as unknown as { getMetadata(key: string, target: object): unknown };
  for (const target of targets) {
    const value = reflect.getMetadata(key, target);
    if (value !== undefined) return value as T;
  }
  return undefined;
}

/** Requests whose route limiter has run: with several FloodgateGuards, only the first applies it. */
const routeChecked = new WeakSet<object>();

function responseTarget(response: object): HeaderTarget {
  // Express's response has setHeader; Fastify's reply has header (and no setHeader).
  const node = response as Parameters<typeof nodeHeaderTarget>[0];
  return typeof node.setHeader === 'function'
    ? nodeHeaderTarget(node)
    : replyTarget(response as Parameters<typeof replyTarget>[0]);
}

/** The Node response under a platform's response (Fastify's reply wraps it as `raw`), for its 'close'. */
function nodeResponseOf(response: object): NodeResponse {
  const reply = response as { raw?: NodeResponse };
  return reply.raw ?? (response as NodeResponse);
}

function buildChecker(options: RouteRateLimitOptions, adapter: string): Checker {
  return {
    guard: createGuard(parseHttpOptions<FloodgateRequest, object>(options, adapter, ['onLimited']), {
      header: (req, name) => nodeHeader(req.headers, name),
      address: (req) => req.ip,
    }),
    onLimited: optionalFunction(options.onLimited, 'onLimited'),
  };
}

/**
 * A NestJS guard: `app.useGlobalGuards(new FloodgateGuard({ limiter }))`, or per controller or
 * route with `@UseGuards(new FloodgateGuard({ limiter }))`. The decision is `req.rateLimit`.
 * @example app.useGlobalGuards(new FloodgateGuard({ rules: { algorithm: 'sliding-window', limit: 120, window: '1m' } }));
 */
export class FloodgateGuard implements CanActivate {
  readonly #own: Checker;
  readonly #inherited: Omit<RouteRateLimitOptions, 'limiter' | 'rules' | 'store' | 'prefix'>;
  readonly #routes = new WeakMap<object, Checker>();

  constructor(options: FloodgateGuardOptions) {
    this.#own = buildChecker(options, 'FloodgateGuard');
    const { limiter: _limiter, rules: _rules, store: _store, prefix: _prefix, ...inherited } = options;
    this.#inherited = inherited;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (metadata<boolean>(SKIP, targets) === true) return true;
    const http = context.switchToHttp();
    const req = http.getRequest<FloodgateRequest>();
    const response = http.getResponse<object>();
    const headers = responseTarget(response);
    const ending = { raw: nodeResponseOf(response), response };
    await this.#limit(this.#own, context, req, headers, ending);
    const route = metadata<RouteRateLimitOptions>(ROUTE_LIMIT, targets);
    if (route !== undefined && !routeChecked.has(req)) {
      routeChecked.add(req);
      await this.#limit(this.#routeChecker(route, context), context, req, headers, ending);
    }
    return true;
  }

  async #limit(
    checker: Checker,
    context: ExecutionContext,
    req: FloodgateRequest,
    headers: HeaderTarget,
    ending: { raw: NodeResponse; response: object },
  ) {
    const decision = await checker.guard.check(req);
    if (decision === undefined) return;
    req.rateLimit = moreRestrictive(req.rateLimit, decision);
    if (checker.guard.respond(decision, headers)) {
      trackUntilClosed(checker.guard, req, decision, { raw: ending.raw, res: ending.response, headers });
      return;
    }
    if (checker.onLimited !== undefined) throw checker.onLimited(context, decision);
    headers.set('Content-Type', PROBLEM_CONTENT_TYPE);
    const problem = checker.guard.problem(decision);
    throw new HttpException(problem, problem.status);
  }

  /** The limiter of a `@RateLimit` route, built once per options object. */
  #routeChecker(route: RouteRateLimitOptions, context: ExecutionContext): Checker {
    let checker = this.#routes.get(route);
    if (checker === undefined) {
      // A controller-wide @RateLimit is one limiter for all its routes; a route's is its own.
      const onRoute = metadata(ROUTE_LIMIT, [context.getHandler()]) === route;
      const scope = `${context.getClass().name}${onRoute ? `.${context.getHandler().name}` : ''}`;
      const merged: RouteRateLimitOptions = { ...this.#inherited, ...route };
      if (merged.limiter === undefined) {
        const base = this.#own.guard.limiter;
        merged.store ??= base.store;
        merged.prefix ??= scopedPrefix(base.prefix, scope);
      }
      checker = buildChecker(merged, `@RateLimit of ${scope}`);
      this.#routes.set(route, checker);
    }
    return checker;
  }
}
