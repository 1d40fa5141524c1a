/**
 * A local stand-in for GitHub's REST API limits, for test/bottleneck/octokit.test.ts, over a real
 * socket. Every answer carries the primary limit's `x-ratelimit-*` headers. Secondary limits as
 * GitHub documents them, scaled down: at most `maxConcurrent` requests in flight, and content
 * creation (POST) at most one per `writeSpacingMs`; a request past either is answered 403 "You have
 * exceeded a secondary rate limit" and counted as a violation. Two paths answer a limit once, on
 * purpose, to see the client wait: `/limited/primary` (403, `x-ratelimit-remaining: 0`, a reset
 * `primaryResetMs` ahead) and `/limited/secondary` (403 with `retry-after: 1`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MockGitHubOptions {
  readonly maxConcurrent: number;
  readonly writeSpacingMs: number;
  /** How long each answer takes. */
  readonly latencyMs: number;
  readonly primaryResetMs: number;
}

export interface MockGitHub {
  readonly url: string;
  /** Requests past a secondary limit (each answered 403). */
  readonly violations: string[];
  readonly mostInFlight: () => number;
  /** Arrival times (epoch ms) of each request to a path. */
  readonly arrivals: Map<string, number[]>;
  /** When the primary limit's reset was (epoch ms), once `/limited/primary` was asked. */
  readonly primaryReset: () => number | undefined;
  close(): Promise<void>;
}

const SECONDARY = 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.';

export async function startMockGitHub(options: MockGitHubOptions): Promise<MockGitHub> {
  const violations: string[] = [];
  const arrivals = new Map<string, number[]>();
  let inFlight = 0;
  let most = 0;
  let lastWrite = Number.NEGATIVE_INFINITY;
  let used = 0;
  let primaryReset: number | undefined;
  const hourReset = Math.ceil(Date.now() / 1000) + 3600;

  function answer(
    response: ServerResponse,
    status: number,
    body: object,
    headers: Record<string, string> = {},
  ) {
    used++;
    response.writeHead(status, {
      'content-type': 'application/json',
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': String(Math.max(0, 5000 - used)),
      'x-ratelimit-reset': String(hourReset),
      'x-ratelimit-used': String(used),
      'x-ratelimit-resource': 'core',
      ...headers,
    });
    response.end(JSON.stringify(body));
  }

  /** The first answer of `path` and whether a secondary limit was passed on arrival. */
  function arrive(request: IncomingMessage, now: number): string | undefined {
    const path = request.url ?? '';
    const times = arrivals.get(path) ?? [];
    times.push(now);
    arrivals.set(path, times);
    if (inFlight > options.maxConcurrent) return `${path}: ${inFlight} in flight`;
    if (request.method === 'POST') {
      const gap = now - lastWrite;
      lastWrite = now;
      if (gap < options.writeSpacingMs) return `${path}: a write ${gap} ms after the last`;
    }
    return undefined;
  }

  const server = createServer((request, response) => {
    request.resume();
    inFlight++;
    most = Math.max(most, inFlight);
    const now = Date.now();
    const violation = arrive(request, now);
    const first = arrivals.get(request.url ?? '')?.length === 1;
    setTimeout(() => {
      inFlight--;
      if (violation !== undefined) {
        violations.push(violation);
        // A short retry-after, so a test that passed a limit fails on it rather than waiting.
        answer(response, 403, { message: SECONDARY }, { 'retry-after': '1' });
      } else if (request.url === '/limited/primary' && first) {
        primaryReset = Math.ceil((now + options.primaryResetMs) / 1000) * 1000;
        answer(
          response,
          403,
          { message: 'API rate limit exceeded for user.' },
          { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(primaryReset / 1000) },
        );
      } else if (request.url === '/limited/secondary' && first) {
        answer(response, 403, { message: SECONDARY }, { 'retry-after': '1' });
      } else {
        answer(response, request.method === 'POST' ? 201 : 200, { ok: true });
      }
    }, options.latencyMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    violations,
    mostInFlight: () => most,
    arrivals,
    primaryReset: () => primaryReset,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
