/**
 * How a request reaches the gateway's routes: its path normalized (paths.ts), letters compared
 * without case except for routes that say `caseSensitive: true`, and the normalized path (case
 * kept) forwarded, so the upstream serves what the limits were chosen for.
 *
 * Case: ignoring routes are registered in lower case and matched with the lower-cased path;
 * case-sensitive routes keep their spelling and are matched with the path as sent. A route
 * constraint keeps the two apart, so a spelling only reaches a case-sensitive route exactly.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { MALFORMED_PATH_PROBLEM, normalizeTarget } from './paths.js';
import { originForm } from './target.js';

const CONSTRAINT = 'floodgatePathCase';
type CaseMode = 'exact' | 'folded';
const MODE = Symbol('floodgate.pathCase');
const FORWARD = Symbol('floodgate.forwardUrl');

type RoutedRequest = IncomingMessage & { [MODE]?: CaseMode; [FORWARD]?: string };

/** The find-my-way strategy behind the constraint: a request's mode, set by `route` below. */
export const pathCaseStrategy = {
  name: CONSTRAINT,
  storage() {
    const stores = new Map<string, unknown>();
    return {
      get: (mode: string) => stores.get(mode) ?? null,
      set: (mode: string, store: unknown) => void stores.set(mode, store),
    };
  },
  deriveConstraint: (req: RoutedRequest) => req[MODE] ?? 'folded',
  mustMatchWhenDerived: true,
  validate(value: unknown) {
    if (value !== 'exact' && value !== 'folded') throw new Error(`${CONSTRAINT}: exact or folded`);
  },
};

/** A route's registration: its URL pattern and, when some route is case-sensitive, its constraint. */
export function routeMatching(path: string, caseSensitive: boolean, anyCaseSensitive: boolean) {
  return {
    url: caseSensitive ? path : path.toLowerCase(),
    ...(anyCaseSensitive ? { constraints: { [CONSTRAINT]: caseSensitive ? 'exact' : 'folded' } } : {}),
  };
}

/**
 * Prepares `req` for `app.routing`: true when it may be routed; false when its path cannot be
 * normalized, and a 400 problem has been sent.
 */
export function prepareRouting(
  app: FastifyInstance,
  req: IncomingMessage,
  res: ServerResponse,
  anyCaseSensitive: boolean,
): boolean {
  // Absolute-form is matched (and forwarded) by its path; `*` is left for the proxy to answer.
  const form = originForm(req.url ?? '/');
  if (form === '*') return true;
  const target = form === undefined ? undefined : normalizeTarget(form);
  if (target === undefined) {
    res.writeHead(400, {
      'content-type': 'application/problem+json',
      'content-length': Buffer.byteLength(MALFORMED_PATH_PROBLEM),
      'cache-control': 'no-store',
    });
    res.end(MALFORMED_PATH_PROBLEM);
    return false;
  }
  const routed = req as RoutedRequest;
  const exact =
    anyCaseSensitive &&
    app.findRoute({
      method: (req.method ?? 'GET') as 'GET',
      url: target.path,
      constraints: { [CONSTRAINT]: 'exact' },
    }) !== null;
  if (exact) routed[MODE] = 'exact';
  routed[FORWARD] = target.forward;
  req.url = exact ? target.path : target.path.toLowerCase();
  return true;
}

/** Once routed: the URL the rest of the request sees (logs, the proxy) is the normalized one. */
export function restoreUrl(req: IncomingMessage): void {
  const forward = (req as RoutedRequest)[FORWARD];
  if (forward !== undefined) req.url = forward;
}
