/**
 * `--adaptive`: the adaptive concurrency limit in front of the upstream. Every request asks it
 * first, in the gateway's first hook: one it refuses gets 503 at once, before its body is read
 * and before any rate-limit check; one it lets through holds its place until its response ends,
 * and the time to the response's head is the latency it learns from. The limit lives for the
 * process, across reloads, while its settings stay the same.
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

/** The process's adaptive limit, rebuilt only when a reload changes its settings. */
export interface AdaptiveHolder {
  limitFor(options: AdaptiveLimitOptions | undefined): AdaptiveLimit | undefined;
}

export function adaptiveHolder(): AdaptiveHolder {
  let held: { signature: string; limit: AdaptiveLimit } | undefined;
  return {
    limitFor(options) {
      if (options === undefined) return undefined;
      const signature = JSON.stringify(options);
      if (held?.signature !== signature) held = { signature, limit: createAdaptiveLimit(options) };
      return held.limit;
    },
  };
}

interface Admitted {
  readonly admission: Admission;
  readonly startedAt: number;
  headAt: number | undefined;
}

const admitted = new WeakMap<FastifyRequest, Admitted>();

/** Adds the adaptive limit's hooks to a generation's app. */
export function addShedding(
  app: FastifyInstance,
  limit: AdaptiveLimit,
  config: GatewayConfig,
  metrics: GatewayMetrics,
  routePriority: (request: FastifyRequest) => Criticality | undefined,
): void {
  const criticalityOf = (request: FastifyRequest): Criticality =>
    headerCriticality(request.raw, config.priorityHeader) ?? routePriority(request) ?? 'standard';

  app.addHook('onRequest', async (request, reply) => {
    const criticality = criticalityOf(request);
    const admission = limit.acquire(criticality);
    if (admission === undefined) {
      metrics.adaptiveShed.inc({ priority: criticality });
      shed(request.raw, reply);
      return reply;
    }
    const entry: Admitted = { admission, startedAt: performance.now(), headAt: undefined };
    admitted.set(request, entry);
    reply.raw.once('close', () => {
      end(entry, reply);
      record(limit, metrics);
    });
    record(limit, metrics);
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

/** A request's criticality from the configured header; undefined when absent or not one of the values. */
function headerCriticality(req: IncomingMessage, header: string | undefined): Criticality | undefined {
  if (header === undefined) return undefined;
  const value = req.headers[header];
  if (typeof value !== 'string') return undefined;
  const named = value.trim().toLowerCase();
  return (CRITICALITIES as readonly string[]).includes(named) ? (named as Criticality) : undefined;
}

function record(limit: AdaptiveLimit, metrics: GatewayMetrics): void {
  const stats = limit.stats();
  metrics.adaptiveLimit.set(stats.limit);
  metrics.adaptiveInFlight.set(stats.inFlight);
  if (stats.latencyMs !== undefined) metrics.adaptiveLatency.set(stats.latencyMs / 1000, { kind: 'window' });
  if (stats.noLoadMs !== undefined) metrics.adaptiveLatency.set(stats.noLoadMs / 1000, { kind: 'no_load' });
}
