/**
 * The adapters' `adaptive` option: each request asks the adaptive limit for admission before
 * anything else (no await: a request to shed is answered at once, before its body is read), and
 * the admission is handed back when its response ends, with the time to the response's head.
 */
import type { AdaptiveLimit, Admission } from '../adaptive/adaptive-limit.js';
import { endAdmission } from '../adaptive/ending.js';
import { CRITICALITIES, type Criticality } from '../adaptive/options.js';
import { describe } from '../describe.js';
import { beforeHead, type NodeResponse } from './node-response.js';

/** The options of the adapters that take an adaptive limit (Express, Fastify, Koa, Hono, node:http). */
export interface AdaptiveHttpOptions<Req> {
  /**
   * An adaptive concurrency limit (`createAdaptiveLimit`) asked before anything else: a request
   * it refuses is answered 503 at once, with `Retry-After` and a problem+json body, before the
   * rate-limit check and before its body is read. Share one limit between the adapters in front
   * of the same upstream.
   */
  adaptive?: AdaptiveLimit;
  /** A request's criticality under `adaptive`: one for all, or a function (synchronous). Default `'standard'`. */
  criticality?: Criticality | ((req: Req) => Criticality | undefined);
}

export const ADAPTIVE_OPTIONS = ['adaptive', 'criticality'] as const;

/** The headers of a shed request's 503. */
export const SHED_HEADERS = {
  'retry-after': '1',
  'cache-control': 'no-store',
  'content-type': 'application/problem+json',
} as const;

/** What `admit` answers for a request the adaptive limit refused. */
export const SHED = 'shed';

/** A request's admission, `SHED`, or undefined when the adapter has no adaptive limit. */
export type Admit<Req> = ((req: Req) => Admission | typeof SHED) | undefined;

/** The body of a shed request's 503 (RFC 9457); nothing from the request is echoed back. */
export const SHED_PROBLEM = JSON.stringify({
  type: 'about:blank',
  title: 'Service Unavailable',
  status: 503,
  detail: 'The service is at capacity and this request was shed; retry in 1 second.',
});

/** Validates the `adaptive` and `criticality` options into the adapter's admission step. */
export function admitter<Req>(adaptive: unknown, criticality: unknown, adapter: string): Admit<Req> {
  if (adaptive === undefined) {
    if (criticality !== undefined) {
      throw new TypeError(
        `${adapter} criticality: only with adaptive (an adaptive limit from createAdaptiveLimit)`,
      );
    }
    return undefined;
  }
  const limit = adaptive as Partial<AdaptiveLimit>;
  if (typeof limit !== 'object' || limit === null || typeof limit.acquire !== 'function') {
    throw new TypeError(
      `${adapter} adaptive: expected an adaptive limit from createAdaptiveLimit, got ${describe(adaptive)}`,
    );
  }
  const acquire = limit.acquire.bind(limit);
  const of = criticalityOf<Req>(criticality, adapter);
  return (req) => acquire(of(req)) ?? SHED;
}

function criticalityOf<Req>(value: unknown, adapter: string): (req: Req) => Criticality {
  if (value === undefined) return () => 'standard';
  if (typeof value === 'function') {
    const pick = value as (req: Req) => unknown;
    return (req) => {
      const named = pick(req);
      return (CRITICALITIES as readonly unknown[]).includes(named) ? (named as Criticality) : 'standard';
    };
  }
  if (!(CRITICALITIES as readonly unknown[]).includes(value)) {
    throw new RangeError(
      `${adapter} criticality: ${describe(value)} must be one of ${CRITICALITIES.join(', ')}, or a function of the request`,
    );
  }
  return () => value as Criticality;
}

/** Hands the admission back when a Node response closes, with the time to its head. */
export function holdUntilClosed(admission: Admission, raw: NodeResponse): void {
  const startedAt = performance.now();
  let headAt: number | undefined;
  beforeHead(raw, () => {
    headAt = performance.now();
  });
  const end = () =>
    endAdmission(admission, raw.statusCode, headAt === undefined ? undefined : headAt - startedAt);
  if (raw.closed) end();
  else raw.once('close', end);
}

/** Answers a shed request on a Node response; the connection closes when a body is still to come. */
export function shedNodeResponse(
  raw: { statusCode: number; setHeader(name: string, value: string): unknown; end(body: string): unknown },
  req: { headers: Record<string, string | string[] | undefined>; complete: boolean },
): void {
  raw.statusCode = 503;
  for (const [name, value] of Object.entries(SHED_HEADERS)) raw.setHeader(name, value);
  if (bodyPending(req)) raw.setHeader('connection', 'close');
  raw.end(SHED_PROBLEM);
}

/** Whether a request announced a body it has not finished sending. */
export function bodyPending(req: {
  headers: Record<string, string | string[] | undefined>;
  complete: boolean;
}): boolean {
  const announced =
    req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  return announced && !req.complete;
}
