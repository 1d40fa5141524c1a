/**
 * The framework-neutral request path: request → (skip, key, cost, plan) → limiter → decision, and
 * decision → headers (+ the denial's problem body). Adapters supply how to read a header and the client
 * address from their request type, and how to set a header on their response type.
 */

import type { CheckOptions } from '../base/types.js';
import type { Decision } from '../core/decision.js';
import { settledDecision } from '../core/settled.js';
import type { Limiter } from '../limiter.js';
import {
  type HeaderTarget,
  rewriteRateLimitHeaders,
  writeDenialHeaders,
  writeRateLimitHeaders,
} from './headers.js';
import { slotHolder } from './hold.js';
import { knownKeyResolver } from './known-key.js';
import { beforeHead, type NodeResponse } from './node-response.js';
import type { ResolvedHttpOptions } from './options.js';
import { type AfterResponse, afterResponse, type ResponseHead, settlingAt } from './outcome.js';
import { denialStatus, type QuotaExceededProblem, quotaExceededProblem } from './problem.js';
import { defaultKey } from './request-keys.js';

/** How an adapter reads what the default key needs from its request type. */
export interface RequestAccess<Req> {
  /** A request header's value, repeated lines joined by `, `; `name` is lowercase. */
  header(req: Req, name: string): string | undefined;
  /** The client's address as the adapter determines it (its trust-proxy rules applied). */
  address(req: Req): string | undefined;
}

export interface Guard<Req, Res = unknown> {
  readonly limiter: Limiter;
  /** Skip, key, cost, limiter check and `onDecision`; `undefined` when `skip` let the request through. */
  check(req: Req): Promise<Decision | undefined>;
  /**
   * Writes the decision's headers (and, for a denial, `Retry-After` and `Cache-Control`);
   * returns whether the request is allowed.
   */
  respond(decision: Decision, target: HeaderTarget): boolean;
  /**
   * Holds an allowed decision's concurrency slots (renewing their lease) until the returned
   * function is called, which also settles the decision per `skipFailedRequests`,
   * `skipSuccessfulRequests` and `settle`: adapters call it once the response has ended
   * (finished, cut short, or failed). Undefined when there is nothing to do then.
   */
  track(req: Req, decision: Decision): AfterResponse<Res> | undefined;
  /** The header (or trailer) `settle` reads, lowercase; adapters that can see trailers watch for it. */
  readonly settleField: string | undefined;
  /**
   * Rewrites an allowed decision's headers on `target` (written there by `respond`) to show
   * the decision as settled, when the response's `head` tells how it will be (see settlingAt).
   * Adapters call it just before the head is sent. Undefined when no head can ever tell.
   * (With `settle` from a header it is defined even without headers to rewrite: the Node
   * family's hook also makes a header given only to `writeHead` readable once the response ends.)
   */
  readonly settleHeaders:
    | ((decision: Decision, head: ResponseHead, target: HeaderTarget) => void)
    | undefined;
  /** The problem document of a denial, with its status (`blockedStatus` for a blocked key). */
  problem(decision: Decision): QuotaExceededProblem;
}

/** Builds the neutral guard of one adapter instance from its resolved options. */
export function createGuard<Req, Res = unknown>(
  options: ResolvedHttpOptions<Req, Res>,
  access: RequestAccess<Req>,
): Guard<Req, Res> {
  const { limiter, key, cost, plan, skip, onDecision, headers, keyPolicy, blockedStatus, outcome } = options;
  const hold = slotHolder(limiter);

  const known = knownKeyResolver(key);

  function keyOf(req: Req): string | Promise<string> {
    // apiKeyOrAddress: this adapter supplies the address and its key policy.
    if (known !== undefined)
      return known.resolve(access.header(req, known.header), access.address(req), keyPolicy);
    if (key !== undefined) return key(req);
    const apiKey =
      keyPolicy.apiKeyHeader === undefined ? undefined : access.header(req, keyPolicy.apiKeyHeader);
    return defaultKey(apiKey, access.address(req), keyPolicy);
  }

  /** Every step answered synchronously: the common configuration (key from the request, fixed cost). */
  const plain =
    skip === undefined && plan === undefined && onDecision === undefined && typeof cost === 'number';
  // A check of cost 1 passes no options object: the limiter then has nothing to validate.
  const checkOptions: CheckOptions | undefined =
    typeof cost === 'number' && cost !== 1 ? { cost } : undefined;

  async function checkInFull(req: Req): Promise<Decision | undefined> {
    if (skip !== undefined && (await skip(req))) return undefined;
    const requestKey = await keyOf(req);
    const units = typeof cost === 'number' ? cost : await cost(req);
    const planName = plan === undefined ? undefined : await plan(req);
    const decision = await limiter.check(
      requestKey,
      planName === undefined ? { cost: units } : { cost: units, plan: planName },
    );
    if (onDecision !== undefined) await onDecision(req, decision);
    return decision;
  }

  return {
    limiter,
    // Without an await per step when none is needed: this runs once per request.
    check: function checkRequest(req) {
      if (!plain) return checkInFull(req);
      let requestKey: string | Promise<string>;
      try {
        requestKey = keyOf(req);
      } catch (error) {
        return Promise.reject(error);
      }
      if (typeof requestKey === 'string') return limiter.check(requestKey, checkOptions);
      // A key function's promise (or a wrong value, which the limiter rejects with its TypeError).
      return Promise.resolve(requestKey).then((resolved) => limiter.check(resolved, checkOptions));
    },
    respond: function respondToDecision(decision, target) {
      writeRateLimitHeaders(target, decision, headers);
      if (decision.allowed) return true;
      writeDenialHeaders(target, decision);
      return false;
    },
    track: (req, decision) => afterResponse(limiter, outcome, req, decision, hold(decision)),
    settleField: typeof outcome?.settle === 'string' ? outcome.settle : undefined,
    settleHeaders:
      outcome !== undefined &&
      ((headers.length > 0 &&
        outcome.wasSuccessful === undefined &&
        (outcome.skipFailed || outcome.skipSuccessful)) ||
        typeof outcome.settle === 'string')
        ? function settleHeaders(decision, head, target) {
            const settling = settlingAt(outcome, head);
            const settled = settling === undefined ? undefined : settledDecision(decision, settling);
            if (settled !== undefined) rewriteRateLimitHeaders(target, decision, settled, headers);
          }
        : undefined,
    problem: (decision) => quotaExceededProblem(decision, denialStatus(decision, blockedStatus)),
  };
}

/**
 * Of two decisions on one request (two limiters), the one to expose: a denial, else the one with
 * less remaining; on a tie, the later one. The same rule picks the single-valued headers.
 */
export function moreRestrictive(earlier: Decision | undefined, later: Decision): Decision {
  if (earlier === undefined || !later.allowed) return later;
  return earlier.remaining < later.remaining ? earlier : later;
}

/** A response of the Node family: the `ServerResponse`, the framework's object over it, and its headers. */
export interface NodeEnding<Res> {
  readonly raw: NodeResponse;
  /** What the options' callbacks receive. */
  readonly res: Res;
  /** The framework's view of the headers (Fastify keeps a reply's own until it writes the head). */
  readonly headers: HeaderTarget;
}

/**
 * Tracks an allowed decision until a Node response emits 'close', which follows a finished
 * response, a cut one and a failed one alike; its headers show the decision as settled when
 * the head tells how it will be.
 */
export function trackUntilClosed<Req, Res>(
  guard: Guard<Req, Res>,
  req: Req,
  decision: Decision,
  { raw, res, headers }: NodeEnding<Res>,
): void {
  const done = guard.track(req, decision);
  if (done === undefined) return;
  const { settleHeaders } = guard;
  if (settleHeaders !== undefined) beforeHead(raw, (head, target) => settleHeaders(decision, head, target));
  const field = guard.settleField;
  let trailer: string | undefined;
  if (field !== undefined) {
    // Node keeps no readable copy of the trailers it sends: note the one settle reads on its way out.
    const addTrailers = raw.addTrailers;
    raw.addTrailers = function addTrailersNoted(headers) {
      for (const [name, value] of Array.isArray(headers) ? headers : Object.entries(headers)) {
        if (name.toLowerCase() === field) trailer = String(value);
      }
      addTrailers.call(raw, headers);
    };
  }
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    if (!raw.writableFinished) return done(undefined);
    done({ res, status: raw.statusCode, field: (name) => trailer ?? headers.get(name) });
  };
  raw.once('close', end);
  // A client that left while its check waited on the store: its response closed before anyone
  // listened, and will not say so again (its slots would be held, and renewed, for good).
  if (raw.closed) end();
}

/** The default denial body, serialised (see problem.ts). */
export function problemBody(problem: QuotaExceededProblem): string {
  return JSON.stringify(problem);
}

/** Reads a header of a Node request (`IncomingMessage.headers`), joining repeated values. */
export function nodeHeader(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** Adapts a reply with `getHeader`/`header` (Fastify's, also under NestJS) to a HeaderTarget. */
export function replyTarget(reply: {
  getHeader(name: string): unknown;
  header(name: string, value: string): unknown;
}): HeaderTarget {
  return {
    get(name) {
      const value = reply.getHeader(name);
      if (value === undefined) return undefined;
      return Array.isArray(value) ? value.join(', ') : String(value);
    },
    set(name, value) {
      reply.header(name, value);
    },
  };
}
