/**
 * `--adaptive`: the adaptive concurrency limit in front of the upstream, and a route's own
 * (`adaptive` on a route) in its place for that route's requests. Every request asks its limit
 * first, in the gateway's first hook: one it refuses gets 503 at once, before its body is read
 * and before any rate-limit check; one it lets through holds its place until its response ends,
 * and the time to the response's head is the latency it learns from. Each limit lives for the
 * process, across reloads, while its settings (and its route's name) stay the same.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type AdaptiveLimit,
  type AdaptiveLimitOptions,
  type Admission,
  type Criticality,
  createAdaptiveLimit,
} from '../../index.js';
import { bodyPending, CRITICALITIES, endAdmission } from '../../internal.js';
import type { GatewayConfig } from '../config/schema.js';
import type { GatewayMetrics } from './metrics.js';
import { sendProblem } from './reply.js';
import { createPlanOf } from './tiers.js';

/** The limits of one generation: the upstream's, and routes' own by route name. */
export interface AdaptiveLimits {
  readonly upstream: AdaptiveLimit | undefined;
  readonly routes: ReadonlyMap<string, AdaptiveLimit>;
}

/** The process's adaptive limits, each rebuilt only when a reload changes its settings. */
export interface AdaptiveHolder {
  limitsFor(config: Pick<GatewayConfig, 'adaptive' | 'routes'>): AdaptiveLimits;
}

/** The upstream's limit is held under '' (a route's name is never empty). */
const UPSTREAM = '';

export function adaptiveHolder(): AdaptiveHolder {
  let held = new Map<string, { signature: string; limit: AdaptiveLimit }>();
  return {
    limitsFor(config) {
      const wanted: [string, AdaptiveLimitOptions][] = [];
      if (config.adaptive !== undefined) wanted.push([UPSTREAM, config.adaptive]);
      for (const route of config.routes)
        if (route.adaptive !== undefined) wanted.push([route.name, route.adaptive]);
      const next = new Map<string, { signature: string; limit: AdaptiveLimit }>();
      for (const [name, options] of wanted) {
        const signature = JSON.stringify(options);
        const kept = held.get(name);
        next.set(
          name,
          kept?.signature === signature ? kept : { signature, limit: createAdaptiveLimit(options) },
        );
      }
      held = next;
      const routes = new Map(
        [...next].filter(([name]) => name !== UPSTREAM).map(([name, { limit }]) => [name, limit]),
      );
      return { upstream: next.get(UPSTREAM)?.limit, routes };
    },
  };
}

/** Whether any request of the generation asks a limit. */
export const anyLimit = (limits: AdaptiveLimits | undefined): limits is AdaptiveLimits =>
  limits !== undefined && (limits.upstream !== undefined || limits.routes.size > 0);

interface Admitted {
  readonly admission: Admission;
  readonly startedAt: number;
  headAt: number | undefined;
}

const admitted = new WeakMap<FastifyRequest, Admitted>();

/** What the hooks know of a request's route. */
export interface RouteOfRequest {
  readonly route: string;
  readonly priority: Criticality | undefined;
}

/** Adds the adaptive limits' hooks to a generation's app. */
export function addShedding(
  app: FastifyInstance,
  limits: AdaptiveLimits,
  config: GatewayConfig,
  metrics: GatewayMetrics,
  routeOf: (request: FastifyRequest) => RouteOfRequest | undefined,
): void {
  const planCriticality = planCriticalityOf(config);
  // Metrics of a route's own limit carry its name; the upstream's keep their unlabelled series.
  const upstreamLabels: Record<string, string> = {};
  const routeLabels = new Map([...limits.routes.keys()].map((name) => [name, { route: name }]));
  app.addHook('onRequest', async (request, reply) => {
    const route = routeOf(request);
    const own = route === undefined ? undefined : limits.routes.get(route.route);
    const limit = own ?? limits.upstream;
    if (limit === undefined) return undefined;
    const labels =
      (own === undefined ? undefined : routeLabels.get(route?.route as string)) ?? upstreamLabels;
    const criticality =
      headerCriticality(request.raw, config.priorityHeader) ??
      route?.priority ??
      planCriticality(request.raw) ??
      'standard';
    const admission = limit.acquire(criticality);
    if (admission === undefined) {
      metrics.adaptiveShed.inc({ priority: criticality, ...labels });
      shed(request.raw, reply);
      return reply;
    }
    const entry: Admitted = { admission, startedAt: performance.now(), headAt: undefined };
    admitted.set(request, entry);
    reply.raw.once('close', () => {
      end(entry, reply);
      record(limit, metrics, labels);
    });
    record(limit, metrics, labels);
    return undefined;
  });
  app.addHook('onSend', async (request) => {
    const entry = admitted.get(request);
    if (entry !== undefined) entry.headAt ??= performance.now();
  });
}

/** 503 with Retry-After, problem+json; the connection closes when a body is still to come. */
function shed(req: IncomingMessage, reply: FastifyReply): void {
  reply.header('retry-after', '1');
  sendProblem(
    reply,
    503,
    'Service Unavailable',
    'the upstream is at capacity and this request was shed; retry in 1 second',
    bodyPending(req),
  );
}

/** How an admitted request ended, told to the limit. */
function end(entry: Admitted, reply: FastifyReply): void {
  endAdmission(
    entry.admission,
    reply.statusCode,
    entry.headAt === undefined ? undefined : entry.headAt - entry.startedAt,
  );
}

/** A request's criticality from its plan's `priority` (the plan its tier header picks). */
export function planCriticalityOf(
  config: Pick<GatewayConfig, 'tiers' | 'plans' | 'planPriorities'>,
): (req: IncomingMessage) => Criticality | undefined {
  const planOf = createPlanOf(config);
  if (planOf === undefined || config.planPriorities.size === 0) return () => undefined;
  return (req) => config.planPriorities.get(planOf(req));
}

/** A request's criticality from the configured header; undefined when absent or not one of the values. */
function headerCriticality(req: IncomingMessage, header: string | undefined): Criticality | undefined {
  if (header === undefined) return undefined;
  const value = req.headers[header];
  if (typeof value !== 'string') return undefined;
  const named = value.trim().toLowerCase();
  return (CRITICALITIES as readonly string[]).includes(named) ? (named as Criticality) : undefined;
}

function record(limit: AdaptiveLimit, metrics: GatewayMetrics, labels: Record<string, string>): void {
  const stats = limit.stats();
  metrics.adaptiveLimit.set(stats.limit, labels);
  metrics.adaptiveInFlight.set(stats.inFlight, labels);
  if (stats.latencyMs !== undefined)
    metrics.adaptiveLatency.set(stats.latencyMs / 1000, { kind: 'window', ...labels });
  if (stats.noLoadMs !== undefined)
    metrics.adaptiveLatency.set(stats.noLoadMs / 1000, { kind: 'no_load', ...labels });
}
