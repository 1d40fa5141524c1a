/**
 * One generation of the gateway: a Fastify app built from one configuration. Rate limiting is
 * the Fastify adapter's (`floodgate/fastify`), registered with `global: false` so that each
 * route is checked by exactly one limiter holding all of its rules (the plan's and the route's
 * own: one atomic store call). With tiers, each limiter holds every plan's rules and the adapter
 * names the request's plan on each check. The app never listens: the server in command.ts hands
 * it requests, which lets a reload swap apps without closing a single connection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { type FloodgateOptions, type FloodgateRouteOptions, floodgate } from '../../http/fastify.js';
import type { Criticality, Decision, TopEntry } from '../../index.js';
import { RuntimeFailure } from '../args.js';
import { ConfigError } from '../config/check.js';
import { DEFAULT_PLAN, type GatewayConfig, METHODS, type RouteSpec } from '../config/schema.js';
import { type AdaptiveLimits, addShedding } from './adaptive.js';
import { createDemoHandler } from './demo.js';
import { createRlsService, type RlsService } from './envoy/service.js';
import { createInFlight, type InFlight } from './in-flight.js';
import { createLimiterCache, type LimiterCache, type LimiterParts } from './limiters.js';
import type { Logger } from './log.js';
import type { GatewayMetrics } from './metrics.js';
import { createProxy } from './proxy.js';
import { pathCaseStrategy, prepareRouting, restoreUrl, routeMatching } from './routing.js';
import { createPlanOf, keyOption } from './tiers.js';

export interface GatewayParts extends LimiterParts {
  /** HMAC secret for API keys in limiter keys (FLOODGATE_API_KEY_SECRET). */
  apiKeySecret?: string;
  /** The adaptive limits in front of the upstream (`--adaptive`) and of routes, shared across reloads. */
  adaptive?: AdaptiveLimits;
}

export interface Gateway {
  /** The Envoy rate limit service of this generation, when `grpc` is configured. */
  readonly rls: RlsService | undefined;
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** The keys this generation checked or denied most (see LimiterCache.top). */
  top(by: 'denied' | 'checked', limit: number, fleet?: boolean): Promise<TopEntry[]>;
  /**
   * Resolves true once no request and no RLS call of this generation is in flight; false after
   * `timeoutMs` if given.
   */
  drain(timeoutMs?: number): Promise<boolean>;
  /**
   * Closes the generation once its RLS calls under way have settled, then its limiters (giving
   * their quota slices and slots back): call it after drain(), before closing the store.
   */
  close(): Promise<void>;
}

/** What the gateway attaches to each route's config, for logs and metrics. */
interface RouteTag {
  route: string;
  /** Units (and concurrency slots) a request of the route takes. */
  cost: number;
  /** Rules (as decisions name them) that take 1 per request whatever the cost: `counts: requests`. */
  requestRules: ReadonlySet<string>;
  /** The route's criticality under the adaptive limit. */
  priority: Criticality | undefined;
}

type RouteHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

const CATCH_ALL = '/*';

export async function buildGateway(parts: GatewayParts): Promise<Gateway> {
  const { config, metrics, logger } = parts;
  const anyCaseSensitive = config.routes.some((route) => route.caseSensitive);
  const app = await createApp(config, anyCaseSensitive);
  const proxy = proxyFor(parts);
  const limiters = createLimiterCache(parts);
  addRequestLog(app, metrics, logger);
  if (parts.adaptive !== undefined) addShedding(app, parts.adaptive, config, metrics, tagOf);
  addErrorHandler(app, logger);
  await registerRoutes(app, parts, limiters, {
    anyCaseSensitive,
    handler: (proxy === undefined ? createDemoHandler(config.admin) : proxy.handle) as RouteHandler,
  });
  await app.ready();
  const rlsCalls = createInFlight();
  const rls =
    config.grpc === undefined || config.rls === undefined
      ? undefined
      : counted(
          createRlsService({ domains: config.rls, limiters, metrics, headers: config.grpc.headers }),
          rlsCalls,
        );
  const close = async () => {
    // An RLS call may still use its limiters after its checks (all_or_nothing refunds); each is
    // bounded by the store deadline.
    await rlsCalls.idle();
    proxy?.close();
    await app.close();
    await limiters.close();
  };
  return { rls, top: limiters.top, ...generation(app, metrics, anyCaseSensitive, rlsCalls, close) };
}

/** The service, each call counted in flight from its first turn until it settles. */
function counted(service: RlsService, calls: InFlight): RlsService {
  return {
    async shouldRateLimit(input) {
      calls.enter();
      try {
        return await service.shouldRateLimit(input);
      } finally {
        calls.leave();
      }
    },
  };
}

/** A Fastify app that never listens and never parses bodies (they are streamed to the upstream). */
async function createApp(config: GatewayConfig, anyCaseSensitive: boolean): Promise<FastifyInstance> {
  const fastify = await loadFastify();
  const app: FastifyInstance = fastify({
    logger: false,
    ...(anyCaseSensitive
      ? { routerOptions: { constraints: { [pathCaseStrategy.name]: pathCaseStrategy } } }
      : {}),
    trustProxy: config.trustProxy,
    exposeHeadRoutes: false,
    return503OnClosing: false,
  });
  // Bodies are streamed, never parsed: the upstream (or the demo's echo) reads them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  return app;
}

/** The reverse proxy to the upstream, or undefined for the demo API. */
function proxyFor({ config, metrics, logger }: GatewayParts) {
  if (config.upstream === undefined) return undefined;
  return createProxy({
    upstream: config.upstream,
    timeoutMs: config.upstreamTimeoutMs,
    clientTimeoutMs: config.clientTimeoutMs,
    clientConcurrency: config.clientConcurrency,
    trustProxy: config.trustProxy,
    onUpstreamError: (reason, error) => {
      metrics.upstreamErrors.inc({ reason });
      logger.warn('upstream_error', { reason, error });
    },
  });
}

/** One log line and one metric per answered request. */
function addRequestLog(app: FastifyInstance, metrics: GatewayMetrics, logger: Logger): void {
  app.addHook('onRequest', async (request) => {
    (request as FastifyRequest & { startedAt?: number }).startedAt = performance.now();
    restoreUrl(request.raw);
  });
  app.addHook('onResponse', async (request, reply) => {
    const tag = tagOf(request);
    const decision = request.rateLimit;
    const started = (request as FastifyRequest & { startedAt?: number }).startedAt ?? performance.now();
    const route = tag?.route ?? 'unmatched';
    metrics.requests.inc({ route, status: String(reply.statusCode) });
    logger.info('request', {
      method: request.method,
      path: (request.raw.url ?? '/').split('?')[0],
      route,
      ...(decision?.plan !== undefined ? { plan: decision.plan } : {}),
      status: reply.statusCode,
      ms: Math.round((performance.now() - started) * 100) / 100,
      ip: request.ip,
      ...(decision === undefined
        ? {}
        : {
            allowed: decision.allowed,
            rule: decision.rule,
            remaining: decision.remaining,
            ...(decision.degraded ? { degraded: decision.degraded } : {}),
            // What a limit being rolled out would have denied: the operator reads it here.
            ...(decision.shadowDenied.length > 0 ? { shadowDenied: decision.shadowDenied } : {}),
          }),
    });
  });
}

function addErrorHandler(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) logger.error('request_error', { path: (request.raw.url ?? '/').split('?')[0], error });
    // A client error may say what was wrong; an internal one says nothing about the internals.
    const title = status >= 500 ? 'Internal Server Error' : error.message;
    reply.code(status).type('application/problem+json').send({ type: 'about:blank', status, title });
  });
}

/** The Fastify adapter's options: keys, plans, headers, and a metric per decision. */
function adapterOptionsFor(parts: GatewayParts): FloodgateOptions {
  const { config, metrics } = parts;
  const planOf = createPlanOf(config);
  return {
    global: false,
    headers: config.headers,
    blockedStatus: config.blockedStatus,
    ...keyOption(config),
    ...(parts.apiKeySecret !== undefined ? { apiKeySecret: parts.apiKeySecret } : {}),
    ...(planOf !== undefined ? { plan: (request: FastifyRequest) => planOf(request.raw) } : {}),
    onDecision: function countDecision(request: FastifyRequest, decision: Decision) {
      const tag = tagOf(request);
      const route = tag?.route ?? 'unknown';
      const plan = decision.plan ?? DEFAULT_PLAN;
      metrics.decisions.inc({
        route,
        plan,
        rule: decision.rule,
        outcome: decision.allowed ? 'allowed' : 'denied',
      });
      for (const rule of decision.shadowDenied) metrics.shadowDenied.inc({ route, plan, rule });
      if (decision.degraded) metrics.degraded.inc({ reason: decision.degraded });
      if (decision.allowed && tag !== undefined) countSlots(metrics, request.raw, decision, tag);
    },
  };
}

// Each request's response (set as the gateway takes the request), so the slots its decision
// holds are counted until the response closes.
const responses = new WeakMap<IncomingMessage, ServerResponse>();

function countSlots(metrics: GatewayMetrics, req: IncomingMessage, decision: Decision, tag: RouteTag): void {
  // A shadow rule that would have denied took no slot.
  const rules = decision.rules
    .filter((view) => view.inFlight !== undefined && view.allowed)
    .map((view) => view.rule);
  const res = responses.get(req);
  // A response already closed (its client left during the check) holds no slot by now.
  if (rules.length === 0 || res === undefined || res.closed) return;
  const slotsOf = (rule: string) => (tag.requestRules.has(rule) ? 1 : tag.cost);
  for (const rule of rules) metrics.slots.add(slotsOf(rule), { rule });
  res.once('close', () => {
    for (const rule of rules) metrics.slots.add(-slotsOf(rule), { rule });
  });
}

/** Every route (and the catch-all), each under the one limiter of its rules. */
async function registerRoutes(
  app: FastifyInstance,
  parts: GatewayParts,
  limiters: LimiterCache,
  options: { anyCaseSensitive: boolean; handler: RouteHandler },
): Promise<void> {
  await app.register(async function limitedRoutes(scope) {
    await scope.register(floodgate, adapterOptionsFor(parts));
    for (const route of withCatchAll(parts.config)) {
      const limiter = route.skip ? undefined : limiters.get(route.rules);
      const rateLimit: FloodgateRouteOptions | false =
        limiter === undefined
          ? false
          : { limiter, ...(route.cost !== 1 ? { cost: route.cost } : {}), ...countingOptions(route) };
      const requestRules = new Set(
        (limiter?.rules ?? []).filter((rule) => rule.counts === 'requests').map((rule) => rule.name),
      );
      const gateway: RouteTag = {
        route: route.name,
        cost: route.cost,
        requestRules,
        priority: route.priority,
      };
      const routeOptions = {
        method: [...route.methods],
        ...routeMatching(route.path, route.caseSensitive, options.anyCaseSensitive),
        config: { rateLimit, gateway },
        handler: options.handler,
      } as RouteOptions;
      try {
        scope.route(routeOptions);
      } catch (error) {
        // Fastify's router refuses some patterns (or two that are the same route to it).
        throw new ConfigError(`${route.where}.path: ${(error as Error).message.replace(/\s+/g, ' ')}`);
      }
    }
  });
}

/**
 * A route's `count` and `settle` as adapter options: an upstream failure answers 502, 503 or
 * 504 (failed), or cuts the response (the adapter counts a cut response as failed).
 */
function countingOptions(route: RouteSpec): FloodgateRouteOptions {
  return {
    ...(route.count === 'failed' ? { skipSuccessfulRequests: true } : {}),
    ...(route.count === 'successful' ? { skipFailedRequests: true } : {}),
    ...(route.settle !== undefined ? { settle: route.settle.header } : {}),
  };
}

/** The generation's handle: hands requests to the app and counts them in flight, for drain(). */
function generation(
  app: FastifyInstance,
  metrics: GatewayMetrics,
  anyCaseSensitive: boolean,
  rlsCalls: InFlight,
  closeAll: () => Promise<void>,
): Omit<Gateway, 'rls' | 'top'> {
  const requests = createInFlight();
  let closing: Promise<void> | undefined;
  return {
    handle(req, res) {
      if (!prepareRouting(app, req, res, anyCaseSensitive)) {
        metrics.requests.inc({ route: 'malformed', status: '400' });
        return;
      }
      requests.enter();
      metrics.inFlight.add(1);
      responses.set(req, res);
      res.once('close', () => {
        requests.leave();
        metrics.inFlight.add(-1);
      });
      app.routing(req, res);
    },
    async drain(timeoutMs) {
      const idle = await Promise.all([requests.idle(timeoutMs), rlsCalls.idle(timeoutMs)]);
      return idle.every(Boolean);
    },
    close() {
      // Shutdown may close a generation that a reload is retiring.
      closing ??= closeAll();
      return closing;
    },
  };
}

/** The user's routes, then the catch-all for every method no user route claims on `/*`. */
function withCatchAll(config: GatewayConfig): RouteSpec[] {
  const claimed = new Set(
    config.routes.filter((route) => route.path === CATCH_ALL).flatMap((route) => route.methods),
  );
  const methods = METHODS.filter((method) => !claimed.has(method));
  if (methods.length === 0) return [...config.routes];
  return [
    ...config.routes,
    {
      where: 'catch-all',
      name: 'default',
      methods,
      path: CATCH_ALL,
      caseSensitive: false,
      cost: 1,
      count: 'all',
      settle: undefined,
      skip: false,
      priority: undefined,
      adaptive: undefined,
      rules: config.plans,
    },
  ];
}

function tagOf(request: FastifyRequest): RouteTag | undefined {
  return (request.routeOptions.config as { gateway?: RouteTag } | undefined)?.gateway;
}

async function loadFastify(): Promise<(options: Record<string, unknown>) => FastifyInstance> {
  try {
    const module = (await import('fastify')) as unknown as {
      fastify?: (options: Record<string, unknown>) => FastifyInstance;
      default?: (options: Record<string, unknown>) => FastifyInstance;
    };
    const factory = module.fastify ?? module.default;
    if (typeof factory !== 'function') throw new Error('no fastify export');
    return factory;
  } catch {
    throw new RuntimeFailure("serve needs the 'fastify' package: npm install fastify");
  }
}
