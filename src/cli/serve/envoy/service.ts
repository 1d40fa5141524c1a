/**
 * ShouldRateLimit, independent of its transport (gRPC, or `POST /json` on the admin listener).
 * Each descriptor gets the limit envoyproxy/ratelimit would give it (match.ts) and is checked by
 * the gateway's limiter of that limit under a key made of the domain and the descriptor's
 * entries (escaped, and digested when long, as every limiter key is). All descriptors are
 * checked in the same turn, so the Redis store batches them into one script call (for a few
 * descriptors, on one slot). Each descriptor counts on its own, as Envoy expects; a domain with
 * `all_or_nothing: true` gives back what an over-limit request took from its other descriptors.
 */
import type { Decision, Limiter } from '../../../index.js';
import { type HeaderStyle, rateLimitHeaders } from '../../../internal.js';
import type { RlsDomains, RlsLimit, RlsUnit } from '../../config/rls.js';
import type { LimiterCache } from '../limiters.js';
import type { GatewayMetrics } from '../metrics.js';
import { applyReplaces, type Entry, limitOf } from './match.js';
import { parseRlsRequest, type RlsDescriptor, type RlsRequest } from './request.js';

export type Code = 'OK' | 'OVER_LIMIT';

export interface DescriptorStatus {
  code: Code;
  currentLimit?: { name?: string; requestsPerUnit: number; unit: RlsUnit };
  limitRemaining: number;
  durationUntilReset?: { seconds: number; nanos: number };
}

/** The RateLimitResponse fields Floodgate sets (proto-loader's camelCase names). */
export interface RlsResponse {
  overallCode: Code;
  statuses: DescriptorStatus[];
  responseHeadersToAdd: { key: string; value: string }[];
}

export interface RlsService {
  /** Answers a decoded request; rejects with InvalidRequest when it is malformed. */
  shouldRateLimit(input: unknown): Promise<RlsResponse>;
}

export interface RlsServiceOptions {
  domains: RlsDomains;
  limiters: LimiterCache;
  metrics: GatewayMetrics;
  /** Header styles sent in response_headers_to_add; none by default. */
  headers: readonly HeaderStyle[];
}

const MAX_UINT32 = 2 ** 32 - 1;

/** One descriptor's outcome, before it becomes a status. */
interface Outcome {
  readonly descriptor: RlsDescriptor;
  readonly limit: RlsLimit | undefined;
  readonly decision?: Decision;
  readonly limiter?: Limiter;
  readonly cost: number;
  readonly over: boolean;
}

export function createRlsService(options: RlsServiceOptions): RlsService {
  const { domains, limiters, metrics, headers } = options;

  function evaluate(
    request: RlsRequest,
    descriptor: RlsDescriptor,
    limit: RlsLimit | undefined,
  ): Outcome | Promise<Outcome> {
    const cost = descriptor.hitsAddend ?? request.hitsAddend;
    if (limit === undefined || limit.unlimited) return { descriptor, limit, cost, over: false };
    if (limit.rule === undefined) return { descriptor, limit, cost, over: true };
    const limiter = limiters.forRules([limit.rule]);
    const key = keyOf(request.domain, descriptor.entries);
    const pending = cost === 0 ? limiter.peek(key) : limiter.check(key, { cost });
    // hits_addend 0 only looks: never over (nothing is added), and peek's answer is for a cost of 1.
    return pending.then(
      (decision): Outcome => ({
        descriptor,
        limit,
        decision,
        limiter,
        cost,
        over: cost > 0 && !decision.allowed,
      }),
    );
  }

  return {
    async shouldRateLimit(input) {
      const request = parseRlsRequest(input);
      const domain = domains.get(request.domain);
      const limits = applyReplaces(
        request.descriptors.map((descriptor) =>
          domain === undefined ? undefined : limitOf(domain, descriptor.entries),
        ),
      );
      // Every check starts in this turn: the store batches them into one call.
      const outcomes = await Promise.all(
        request.descriptors.map((descriptor, i) => evaluate(request, descriptor, limits[i])),
      );
      const overLimit = outcomes.some((outcome) => outcome.over && !outcome.limit?.shadowMode);
      const refunded =
        overLimit && domain?.allOrNothing === true ? await refund(outcomes) : new Set<Outcome>();
      // Only configured domains become labels: clients choose the others.
      const label = domain === undefined ? 'unknown' : request.domain;
      for (const outcome of outcomes) count(metrics, label, outcome);
      return {
        overallCode: overLimit ? 'OVER_LIMIT' : 'OK',
        statuses: outcomes.map((outcome) => statusOf(outcome, refunded.has(outcome))),
        responseHeadersToAdd: headers.length === 0 ? [] : headersOf(outcomes, headers),
      };
    },
  };
}

/** The limiter key of a descriptor: its domain and entries, each escaped so none can run into the next. */
export function keyOf(domain: string, entries: readonly Entry[]): string {
  const parts = [domain, ...entries.flatMap((entry) => [entry.key, entry.value])];
  return `envoy:${parts.map(encodeURIComponent).join(':')}`;
}

/**
 * all_or_nothing: what an over-limit request took from its other descriptors is given back
 * (a decision of the onStoreError policy took nothing).
 */
async function refund(outcomes: readonly Outcome[]): Promise<Set<Outcome>> {
  const taken = outcomes.filter(
    (outcome) => outcome.decision?.allowed === true && !outcome.decision.degraded && outcome.cost > 0,
  );
  await Promise.all(taken.map((outcome) => outcome.limiter?.refund(outcome.decision as Decision)));
  return new Set(taken);
}

function statusOf(outcome: Outcome, refunded: boolean): DescriptorStatus {
  const { limit, decision } = outcome;
  if (limit === undefined) return { code: 'OK', limitRemaining: 0 };
  if (limit.unlimited) return { code: 'OK', limitRemaining: MAX_UINT32 };
  const code: Code = outcome.over && !limit.shadowMode ? 'OVER_LIMIT' : 'OK';
  const currentLimit = {
    ...(limit.name !== undefined ? { name: limit.name } : {}),
    requestsPerUnit: limit.requestsPerUnit,
    unit: limit.unit as RlsUnit,
  };
  if (decision === undefined) return { code, currentLimit, limitRemaining: 0 };
  const givenBack = refunded ? outcome.cost : outcome.cost === 0 && decision.allowed ? 1 : 0;
  const remaining = Math.min(decision.limit, decision.remaining + givenBack);
  const waitMs =
    !decision.allowed && Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : decision.resetMs;
  return {
    code,
    currentLimit,
    limitRemaining: Math.min(MAX_UINT32, remaining),
    durationUntilReset: { seconds: Math.floor(waitMs / 1000), nanos: (waitMs % 1000) * 1_000_000 },
  };
}

/** The draft RateLimit headers of the most restrictive descriptor: a denial, else the least remaining. */
function headersOf(outcomes: readonly Outcome[], styles: readonly HeaderStyle[]) {
  const tighter = (a: Decision, b: Decision) =>
    a.allowed !== b.allowed ? !a.allowed : a.remaining < b.remaining;
  let binding: Decision | undefined;
  for (const { decision, limit } of outcomes) {
    if (decision === undefined || limit?.shadowMode) continue;
    if (binding === undefined || tighter(decision, binding)) binding = decision;
  }
  if (binding === undefined) return [];
  return rateLimitHeaders(binding, styles).map(([key, value]) => ({ key, value }));
}

/** floodgate_rls_decisions_total{domain, descriptor, outcome}; client values appear only with detailed_metric. */
function count(metrics: GatewayMetrics, domain: string, outcome: Outcome): void {
  const { limit, decision } = outcome;
  const last = outcome.descriptor.entries.at(-1);
  // As the reference service: the value is added only where the config matched the key alone.
  const detailed =
    limit?.detailedMetric === true && last !== undefined && limit.path.endsWith(`.${last.key}`)
      ? `_${labelSafe(last.value)}`
      : '';
  const name = limit === undefined ? 'none' : `${limit.path.slice(domain.length + 1)}${detailed}`;
  // Under `serve --shadow` the limit's rule is a shadow rule: its decision allows and names it.
  const shadowOver = outcome.cost > 0 && (decision?.shadowDenied.length ?? 0) > 0;
  const result =
    limit === undefined
      ? 'no_limit'
      : limit.unlimited
        ? 'unlimited'
        : shadowOver || (outcome.over && limit.shadowMode)
          ? 'shadow_over_limit'
          : outcome.over
            ? 'over_limit'
            : 'ok';
  metrics.rlsDecisions.inc({ domain, descriptor: name, outcome: result });
  if (decision?.degraded) metrics.degraded.inc({ reason: decision.degraded });
}

/** A client's value as a metric label: printable ASCII only, at most 64 characters. */
function labelSafe(value: string): string {
  return value.slice(0, 64).replace(/[^\x20-\x7e]/g, '_');
}
