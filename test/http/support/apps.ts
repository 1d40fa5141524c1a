/**
 * One small app per adapter, built from the same neutral description, listening on a free
 * loopback port: the shared HTTP suite runs the same requests against every adapter.
 * Every app answers `GET /` (and any other path) with `{ remaining }` read from the decision the
 * adapter exposes to handlers, and `/health` is skipped by the limiter.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import Koa2 from 'koa2';
import { rateLimit } from '../../../src/http/express.js';
import { floodgate } from '../../../src/http/fastify.js';
import { createFetchGuard } from '../../../src/http/fetch.js';
import type { HeaderStyle } from '../../../src/http/headers.js';
import { rateLimit as honoRateLimit } from '../../../src/http/hono.js';
import { rateLimit as koaRateLimit } from '../../../src/http/koa.js';
import { createHttpGuard, type RateLimitedRequest } from '../../../src/http/node.js';
import { apiKeyOrAddress, type Decision, type Limiter } from '../../../src/index.js';
import { nestStarter } from './nest.js';

export interface AppSpec {
  limiter: Limiter;
  headers?: HeaderStyle | false | readonly HeaderStyle[];
  /** Take the cost from the `x-cost` request header (default 1). */
  costHeader?: boolean;
  /** Replace the 429 with `418 custom` to show onLimited is used. */
  customLimited?: boolean;
  onDecision?: (decision: Decision) => void;
  /** Believe `X-Forwarded-For` from a proxy on loopback (the adapter's own trust-proxy setting). */
  trustLoopbackProxy?: boolean;
  /**
   * API keys in `x-api-key`: `'any'` trusts every key (`apiKeyHeader`), a function keys by the
   * keys it knows (`apiKeyOrAddress`). Default: the client address only.
   */
  apiKeys?: 'any' | ((key: string) => boolean | Promise<boolean>);
  /** The adapter's `blockedStatus` (default: the adapter's own, 429). */
  blockedStatus?: 403 | 429;
  /** Response-aware counting; the handlers answer with the status the `x-status` request header asks for. */
  outcome?: { skipFailedRequests?: boolean; skipSuccessfulRequests?: boolean; settle?: string };
}

/**
 * What a handler answers: the status in `x-status` (default 200), and the `x-actual` request
 * header echoed as a response header (the actual cost for `settle: 'x-actual'`).
 */
export function answerOf(header: (name: string) => string | string[] | null | undefined): {
  status: number;
  headers: Record<string, string>;
} {
  const status = header('x-status');
  const actual = header('x-actual');
  return {
    status: typeof status === 'string' ? Number(status) : 200,
    headers: typeof actual === 'string' ? { 'x-actual': actual } : {},
  };
}

/** The adapter options of `spec.apiKeys` and `spec.blockedStatus`. */
export function sharedOptions(spec: AppSpec) {
  const status = {
    ...spec.outcome,
    ...(spec.blockedStatus === undefined ? {} : { blockedStatus: spec.blockedStatus }),
  };
  if (spec.apiKeys === undefined) return status;
  if (spec.apiKeys === 'any') return { ...status, apiKeyHeader: 'x-api-key' };
  return { ...status, key: apiKeyOrAddress({ header: 'X-Api-Key', known: spec.apiKeys }) };
}

export interface App {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export type AdapterName =
  | 'express'
  | 'fastify'
  | 'node'
  | 'fetch'
  | 'hono'
  | 'koa'
  | 'koa2'
  | 'nest-express'
  | 'nest-fastify';
export type StartApp = (spec: AppSpec) => Promise<App>;

/** Async on purpose: cost functions may look things up. */
async function costFrom(value: string | string[] | null | undefined): Promise<number> {
  return value === undefined || value === null ? 1 : Number(value);
}

const skipHealth = (path: string) => path === '/health';

/** Starts `server` on a free loopback port; `close` ends its connections and waits for it. */
export async function listen(server: Server): Promise<App> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

export const startExpress: StartApp = async (spec) => {
  const app = express();
  if (spec.trustLoopbackProxy) app.set('trust proxy', 'loopback');
  app.use(
    rateLimit({
      limiter: spec.limiter,
      ...sharedOptions(spec),
      ...(spec.headers === undefined ? {} : { headers: spec.headers }),
      ...(spec.costHeader ? { cost: (req) => costFrom(req.headers['x-cost']) } : {}),
      skip: (req) => skipHealth(req.path),
      ...(spec.onDecision ? { onDecision: (_req, decision) => spec.onDecision?.(decision) } : {}),
      ...(spec.customLimited ? { onLimited: (_req, res) => void res.status(418).send('custom') } : {}),
    }),
  );
  app.use((req, res) => {
    const answer = answerOf((name) => req.headers[name]);
    res
      .status(answer.status)
      .set(answer.headers)
      .json({ remaining: req.rateLimit?.remaining ?? null });
  });
  return listen(createServer(app));
};

export const startFastify: StartApp = async (spec) => {
  const app = Fastify({ trustProxy: spec.trustLoopbackProxy ? '127.0.0.1' : false });
  await app.register(floodgate, {
    limiter: spec.limiter,
    ...sharedOptions(spec),
    ...(spec.headers === undefined ? {} : { headers: spec.headers }),
    ...(spec.costHeader ? { cost: (request) => costFrom(request.headers['x-cost']) } : {}),
    skip: (request) => skipHealth(request.url),
    ...(spec.onDecision ? { onDecision: (_request, decision) => spec.onDecision?.(decision) } : {}),
    ...(spec.customLimited
      ? {
          onLimited: (_request, reply) => {
            reply.code(418).send('custom');
          },
        }
      : {}),
  });
  app.all('/*', async (request, reply) => {
    const answer = answerOf((name) => request.headers[name]);
    reply.code(answer.status).headers(answer.headers);
    return { remaining: request.rateLimit?.remaining ?? null };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, port, close: () => app.close() };
};

function pathOf(url: string | undefined): string {
  return new URL(url ?? '/', 'http://x').pathname;
}

export const startNode: StartApp = async (spec) => {
  const guard = createHttpGuard({
    limiter: spec.limiter,
    ...sharedOptions(spec),
    ...(spec.headers === undefined ? {} : { headers: spec.headers }),
    ...(spec.costHeader ? { cost: (req) => costFrom(req.headers['x-cost']) } : {}),
    skip: (req) => skipHealth(pathOf(req.url)),
    ...(spec.trustLoopbackProxy ? { trustProxy: 'loopback' } : {}),
    ...(spec.onDecision ? { onDecision: (_req, decision) => spec.onDecision?.(decision) } : {}),
    ...(spec.customLimited
      ? {
          onLimited: (_req, res) => {
            res.statusCode = 418;
            res.end('custom');
          },
        }
      : {}),
  });
  const server = createServer(async (req, res) => {
    if (!(await guard(req, res))) return;
    const answer = answerOf((name) => req.headers[name]);
    res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json' });
    res.end(JSON.stringify({ remaining: (req as RateLimitedRequest).rateLimit?.remaining ?? null }));
  });
  return listen(server);
};

/** Turns a node request into a Fetch API Request, keeping repeated header lines. */
export function toRequest(req: IncomingMessage, origin: string): Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
  }
  return new Request(new URL(req.url ?? '/', origin), { method: req.method ?? 'GET', headers });
}

/** Writes a Fetch API Response to a node response. */
export async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  res.statusCode = response.status;
  for (const [name, value] of response.headers) res.setHeader(name, value);
  res.end(Buffer.from(await response.arrayBuffer()));
}

export const startFetch: StartApp = async (spec) => {
  const guard = createFetchGuard({
    limiter: spec.limiter,
    ...sharedOptions(spec),
    ...(spec.headers === undefined ? {} : { headers: spec.headers }),
    ...(spec.costHeader ? { cost: (request) => costFrom(request.headers.get('x-cost')) } : {}),
    skip: (request) => skipHealth(new URL(request.url).pathname),
    ...(spec.trustLoopbackProxy ? { trustProxy: 'loopback' } : {}),
    ...(spec.onDecision ? { onDecision: (_request, decision) => spec.onDecision?.(decision) } : {}),
    ...(spec.customLimited ? { onLimited: () => new Response('custom', { status: 418 }) } : {}),
  });
  const server = createServer(async (req, res) => {
    const request = toRequest(req, 'http://127.0.0.1');
    const limited = await guard(request, { ip: req.socket.remoteAddress });
    const answer = answerOf((name) => request.headers.get(name));
    const response =
      limited ??
      guard.withHeaders(
        request,
        Response.json({ remaining: guard.decisionFor(request)?.remaining ?? null }, answer),
      );
    await writeResponse(response, res);
  });
  return listen(server);
};

/** Hono on `@hono/node-server`, the address from the Node bindings (no `ip` option). */
export const startHono: StartApp = async (spec) => {
  const app = new Hono();
  app.use(
    honoRateLimit({
      limiter: spec.limiter,
      ...sharedOptions(spec),
      ...(spec.headers === undefined ? {} : { headers: spec.headers }),
      ...(spec.costHeader ? { cost: (c) => costFrom(c.req.header('x-cost')) } : {}),
      skip: (c) => skipHealth(c.req.path),
      ...(spec.trustLoopbackProxy ? { trustProxy: 'loopback' } : {}),
      ...(spec.onDecision ? { onDecision: (_c, decision) => spec.onDecision?.(decision) } : {}),
      ...(spec.customLimited ? { onLimited: () => new Response('custom', { status: 418 }) } : {}),
    }),
  );
  app.all('*', (c) => {
    const answer = answerOf((name) => c.req.header(name));
    return c.json({ remaining: c.get('rateLimit')?.remaining ?? null }, answer.status as 200, answer.headers);
  });
  return listen(createAdaptorServer({ fetch: app.fetch }) as Server);
};

/** A Koa app (3, or 2 through the `koa2` alias); `app.proxy` is Koa's own trust-proxy switch. */
function koaStarter(Application: typeof Koa): StartApp {
  return async (spec) => {
    const app = new Application({ proxy: spec.trustLoopbackProxy === true });
    app.silent = true;
    app.use(
      koaRateLimit({
        limiter: spec.limiter,
        ...sharedOptions(spec),
        ...(spec.headers === undefined ? {} : { headers: spec.headers }),
        ...(spec.costHeader ? { cost: (ctx) => costFrom(ctx.headers['x-cost']) } : {}),
        skip: (ctx) => skipHealth(ctx.path),
        ...(spec.onDecision ? { onDecision: (_ctx, decision) => spec.onDecision?.(decision) } : {}),
        ...(spec.customLimited
          ? {
              onLimited: (ctx) => {
                ctx.status = 418;
                ctx.body = 'custom';
              },
            }
          : {}),
      }),
    );
    app.use((ctx) => {
      const answer = answerOf((name) => ctx.headers[name]);
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null };
    });
    return listen(createServer(app.callback()));
  };
}

export const ADAPTERS: Record<AdapterName, StartApp> = {
  express: startExpress,
  fastify: startFastify,
  node: startNode,
  fetch: startFetch,
  hono: startHono,
  koa: koaStarter(Koa),
  koa2: koaStarter(Koa2),
  'nest-express': nestStarter('express'),
  'nest-fastify': nestStarter('fastify'),
};
