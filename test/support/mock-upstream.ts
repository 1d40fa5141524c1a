/**
 * A mock rate-limited API for scheduler tests: a real node:http server on a free loopback port
 * with a hidden limit (requests and tokens per window, `src/cli/compare/hidden-limit.ts`, the
 * lab's model), answering in a chosen dialect's headers, 429 (or GitHub's 403) past the limit.
 * A request's JSON body `{ "tokens": n }` says what it uses; a success reports it as
 * `usage.total_tokens`, like OpenAI. Counters say what reached it and what it refused.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHiddenLimit, type UpstreamDialect } from '../../src/cli/compare/hidden-limit.js';

export interface MockUpstreamOptions {
  /** Requests per window (default 60). */
  requests?: number;
  /** Tokens per window (default 100,000). */
  tokens?: number;
  /** Window in ms (default 60,000; tests scale it down). */
  windowMs?: number;
  /** Header dialect (default 'openai'). */
  dialect?: UpstreamDialect;
  /** Requests in flight past which it refuses (default: no such limit). */
  concurrency?: number;
  /** How long a success takes to answer, in ms (default 0). */
  latencyMs?: number;
}

export interface MockUpstreamCounts {
  /** Requests that reached it. */
  requests: number;
  /** Answered 200. */
  served: number;
  /** Refused for the hidden limit (429, or 403 for github-secondary). */
  limited: number;
  /** Tokens used by the served requests. */
  tokens: number;
  inFlight: number;
  maxInFlight: number;
}

export interface MockAnswer {
  /** Ms since the upstream started. */
  atMs: number;
  status: number;
  tokens: number;
}

export interface MockUpstream {
  readonly url: string;
  counts(): MockUpstreamCounts;
  /** Every answer, in order. */
  readonly answers: readonly MockAnswer[];
  /** Holds successes until `resume()`, so a test can see requests in flight. */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

function readTokens(body: string): number | undefined {
  if (body === '') return 0;
  try {
    const tokens = (JSON.parse(body) as { tokens?: unknown }).tokens ?? 0;
    return Number.isSafeInteger(tokens) && (tokens as number) >= 0 ? (tokens as number) : undefined;
  } catch {
    return undefined;
  }
}

export async function startMockUpstream(options: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const startMs = Date.now();
  const limit = createHiddenLimit({
    requests: options.requests ?? 60,
    tokens: options.tokens ?? 100_000,
    windowMs: options.windowMs ?? 60_000,
    dialect: options.dialect ?? 'openai',
    startMs,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
  });
  const counts: MockUpstreamCounts = {
    requests: 0,
    served: 0,
    limited: 0,
    tokens: 0,
    inFlight: 0,
    maxInFlight: 0,
  };
  const answers: MockAnswer[] = [];
  let held: (() => void)[] | undefined;

  const server: Server = createServer(async (req, res) => {
    counts.requests += 1;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const cost = readTokens(Buffer.concat(chunks).toString('utf8'));
    if (cost === undefined) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"type":"invalid_request_error","message":"tokens must be a whole number >= 0"}}');
      return;
    }
    const now = Date.now();
    const answer = limit.answer(cost, now, counts.inFlight);
    answers.push({ atMs: now - startMs, status: answer.status, tokens: answer.tokens });
    if (answer.status !== 200) {
      counts.limited += 1;
      res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json' });
      res.end('{"error":{"type":"rate_limit_exceeded","message":"Rate limit reached"}}');
      return;
    }
    counts.served += 1;
    counts.tokens += cost;
    counts.inFlight += 1;
    counts.maxInFlight = Math.max(counts.maxInFlight, counts.inFlight);
    res.once('close', () => {
      counts.inFlight -= 1;
    });
    if (held) await new Promise<void>((resolve) => held?.push(resolve));
    if (options.latencyMs) await new Promise((resolve) => setTimeout(resolve, options.latencyMs));
    res.writeHead(200, { ...answer.headers, 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'chat.completion', usage: { total_tokens: cost } }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const resume = () => {
    const waiting = held ?? [];
    held = undefined;
    for (const release of waiting) release();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => ({ ...counts }),
    answers,
    pause() {
      held ??= [];
    },
    resume,
    async close() {
      resume();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
