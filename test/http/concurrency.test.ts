/**
 * The adapters hold a request's concurrency slot exactly as long as its response is in flight:
 * released when the response finishes, when the client aborts and when the handler fails, and
 * kept (renewed) by a response that streams for longer than the lease. Real sockets, each
 * adapter (Express, Fastify, node:http, Fetch, Koa, Hono, Nest) with a handler of its own kind.
 */
import 'reflect-metadata';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAdaptorServer } from '@hono/node-server';
import { Controller, Get, Module, Res } from '@nestjs/common';
import express, { type Response as ExpressResponse } from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import Koa from 'koa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/express.js';
import { floodgate } from '../../src/http/fastify.js';
import { createFetchGuard } from '../../src/http/fetch.js';
import { rateLimit as honoRateLimit } from '../../src/http/hono.js';
import { rateLimit as koaRateLimit } from '../../src/http/koa.js';
import { FloodgateGuard } from '../../src/http/nestjs.js';
import { createHttpGuard } from '../../src/http/node.js';
import { createLimiter, type Limiter, redisStore } from '../../src/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { type App, listen } from './support/apps.js';
import { startNestApp } from './support/nest.js';
import { hostFetchGuard, startStream, statusOf } from './support/streaming.js';

/** Ends every /stream response that is waiting. */
let endStreams: (() => void)[] = [];
const streamEnd = () => new Promise<void>((resolve) => endStreams.push(resolve));

type Start = (limiter: Limiter) => Promise<App>;

/** A Fetch response that sends `first;` at once and `last` when the test ends its stream. */
function streamedResponse(): Response {
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(new TextEncoder().encode('first;'));
      await streamEnd();
      controller.enqueue(new TextEncoder().encode('last'));
      controller.close();
    },
  });
  return new Response(body);
}

const startExpress: Start = async (limiter) => {
  const app = express();
  app.use(rateLimit({ limiter }));
  app.get('/quick', (_req, res) => {
    res.send('ok');
  });
  app.get('/stream', (_req, res) => {
    res.write('first;');
    void streamEnd().then(() => res.end('last'));
  });
  app.get('/fail', () => {
    throw new Error('handler failed');
  });
  return listen(createServer(app));
};

const startFastify: Start = async (limiter) => {
  const app = Fastify();
  await app.register(floodgate, { limiter });
  app.get('/quick', async () => 'ok');
  app.get('/stream', (_request, reply) => {
    const body = new PassThrough();
    body.write('first;');
    void streamEnd().then(() => body.end('last'));
    return reply.send(body);
  });
  app.get('/fail', async () => {
    throw new Error('handler failed');
  });
  await app.ready();
  return listen(createServer((req, res) => app.routing(req, res)));
};

const startNode: Start = async (limiter) => {
  const guard = createHttpGuard({ limiter });
  return listen(
    createServer(async (req, res) => {
      if (!(await guard(req, res))) return;
      if (req.url === '/stream') {
        res.write('first;');
        await streamEnd();
        res.end('last');
      } else if (req.url === '/fail') {
        res.destroy(new Error('handler failed'));
      } else {
        res.end('ok');
      }
    }),
  );
};

/** A Fetch API server the way Bun and Deno run one: the request's signal aborts when its client goes. */
const startFetch: Start = async (limiter) => {
  const guard = createFetchGuard({ limiter });
  async function handle(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === '/fail') throw new Error('handler failed');
    if (path !== '/stream') return new Response('ok');
    return streamedResponse();
  }
  return hostFetchGuard(guard, handle);
};

const startKoa: Start = async (limiter) => {
  const app = new Koa();
  app.silent = true;
  app.use(koaRateLimit({ limiter }));
  app.use((ctx) => {
    if (ctx.path === '/fail') throw new Error('handler failed');
    if (ctx.path !== '/stream') {
      ctx.body = 'ok';
      return;
    }
    const body = new PassThrough();
    body.write('first;');
    void streamEnd().then(() => body.end('last'));
    ctx.body = body;
  });
  return listen(createServer(app.callback()));
};

/** Hono on @hono/node-server, whose request signal aborts when the client goes. */
const startHono: Start = async (limiter) => {
  const app = new Hono();
  app.use(honoRateLimit({ limiter }));
  app.get('/quick', (c) => c.text('ok'));
  app.get('/fail', () => {
    throw new Error('handler failed');
  });
  app.get('/stream', () => streamedResponse());
  return listen(createAdaptorServer({ fetch: app.fetch }) as Server);
};

@Controller()
class SlotController {
  @Get('quick')
  quick() {
    return 'ok';
  }

  @Get('fail')
  fail() {
    throw new Error('handler failed');
  }

  @Get('stream')
  stream(@Res() res: ExpressResponse) {
    res.write('first;');
    void streamEnd().then(() => res.end('last'));
  }
}

@Module({ controllers: [SlotController] })
class SlotModule {}

/** Nest on its Express platform, FloodgateGuard as a global guard. */
const startNest: Start = (limiter) =>
  startNestApp(SlotModule, 'express', false, (app) => {
    app.useGlobalGuards(new FloodgateGuard({ limiter }));
  });

const ADAPTERS: Record<string, Start> = {
  express: startExpress,
  fastify: startFastify,
  node: startNode,
  fetch: startFetch,
  koa: startKoa,
  hono: startHono,
  nest: startNest,
};

/** The key's free slots as the limiter sees them now, polled until `expected` (the release is asynchronous). */
async function freeSlotsBecome(limiter: Limiter, expected: number): Promise<number> {
  let free = -1;
  for (let i = 0; i < 200; i++) {
    const view = (await limiter.peek('ip:127.0.0.1')).rules[0];
    free = view === undefined ? -1 : view.allowed ? view.remaining + 1 : view.remaining;
    if (free === expected) break;
    await sleep(10);
  }
  return free;
}

// For checks that wait on a store: a real Redis, paused while a client leaves.
let redis: RedisServer;
let redisClient: Redis;
beforeAll(async () => {
  redis = await startRedisServer();
  redisClient = new Redis(redis.port, '127.0.0.1');
});
afterAll(async () => {
  redisClient?.disconnect();
  await redis?.stop();
});

let app: App | undefined;
afterEach(async () => {
  for (const end of endStreams) end();
  endStreams = [];
  await app?.close();
  app = undefined;
});

describe.each(Object.entries(ADAPTERS))('%s', (_name, start) => {
  const limiterOf = (lease: number) =>
    createLimiter({ rules: { name: 'inflight', algorithm: 'concurrency', limit: 1, lease } });

  it('a finished response gives its slot back', async () => {
    const limiter = limiterOf(60_000);
    app = await start(limiter);
    expect(await statusOf(app, '/quick')).toBe(200);
    expect(await freeSlotsBecome(limiter, 1)).toBe(1);
    expect(await statusOf(app, '/quick')).toBe(200);
  });

  it('a client that aborts frees its slot at once, long before the lease', async () => {
    const limiter = limiterOf(60_000);
    app = await start(limiter);
    const stream = await startStream(app, '/stream');
    expect(stream.status).toBe(200);
    expect(await statusOf(app, '/quick')).toBe(429);
    stream.abort();
    expect(await freeSlotsBecome(limiter, 1)).toBe(1);
    expect(await statusOf(app, '/quick')).toBe(200);
  });

  it('a client that leaves while its check waits on the store frees the slot the check took', async () => {
    const limiter = createLimiter({
      prefix: `left-${_name}`,
      rules: { name: 'inflight', algorithm: 'concurrency', limit: 1, lease: 60_000 },
      store: redisStore({ client: redisClient }),
      timeout: '10s',
    });
    try {
      app = await start(limiter);
      // Writes wait until the pause ends: the check is answered (allowed) after its client left.
      await redisClient.call('CLIENT', 'PAUSE', '600', 'WRITE');
      const left = httpRequest(`${app.url}/quick`, { agent: false });
      left.on('error', () => undefined);
      left.end();
      await sleep(200);
      left.destroy();
      expect(await freeSlotsBecome(limiter, 1)).toBe(1);
      expect(await statusOf(app, '/quick')).toBe(200);
    } finally {
      await limiter.close();
    }
  });

  it('a failed handler gives its slot back', async () => {
    const limiter = limiterOf(60_000);
    app = await start(limiter);
    await statusOf(app, '/fail').catch(() => 0);
    expect(await freeSlotsBecome(limiter, 1)).toBe(1);
    expect(await statusOf(app, '/quick')).toBe(200);
  });

  it('a response streaming past the lease keeps its slot (renewed), and frees it when done', async () => {
    const lease = 1000;
    const limiter = limiterOf(lease);
    app = await start(limiter);
    const stream = await startStream(app, '/stream');
    await sleep(2.5 * lease);
    expect(await statusOf(app, '/quick')).toBe(429);
    for (const end of endStreams) end();
    endStreams = [];
    await stream.ended;
    expect(await freeSlotsBecome(limiter, 1)).toBe(1);
    expect(await statusOf(app, '/quick')).toBe(200);
  });
});
