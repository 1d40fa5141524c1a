/**
 * Response-aware counting where the shared suite cannot reach: responses held open while
 * others are checked, clients that abort, handlers that throw, the actual cost in an HTTP
 * trailer, settle as a function, and Fastify's preHandler hook. Real sockets, real Redis.
 */
import { createServer } from 'node:http';
import { PassThrough } from 'node:stream';
import express from 'express';
import Fastify from 'fastify';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { rateLimit } from '../../src/http/express.js';
import { floodgate } from '../../src/http/fastify.js';
import { createFetchGuard } from '../../src/http/fetch.js';
import { createHttpGuard } from '../../src/http/node.js';
import { createLimiter, type Limiter, type RuleOptions, redisStore } from '../../src/index.js';
import { useRedisServer } from '../support/redis-server.js';
import { type App, listen } from './support/apps.js';
import { integerField, listField } from './support/client.js';
import { hostFetchGuard, startStream, statusOf } from './support/streaming.js';
import { watchSettles } from './support/suite.js';

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

/** Opens every held response (`/hold`, `/stream`), with the status it was asked for. */
let gates: (() => void)[] = [];
const gate = () => new Promise<void>((resolve) => gates.push(resolve));
let arrived = 0;

interface Counting {
  skipFailedRequests?: boolean;
  skipSuccessfulRequests?: boolean;
  settle?: string;
}
type Start = (limiter: Limiter, counting: Counting) => Promise<App>;

const askedStatus = (url: string | undefined) =>
  Number(new URL(url ?? '/', 'http://x').searchParams.get('status') ?? 200);
const actualOf = (url: string | undefined) =>
  new URL(url ?? '/', 'http://x').searchParams.get('actual') ?? '';

/**
 * Every app answers: `/ok`; `/hold?status=N` once the gate opens; `/stream` (a first chunk,
 * the rest once the gate opens); `/throw` (the handler throws); `/trailer?actual=N` (a chunked
 * body, then the trailer `x-actual: N`).
 */
const startExpress: Start = async (limiter, counting) => {
  const app = express();
  app.use(rateLimit({ limiter, ...counting }));
  app.get('/ok', (_req, res) => void res.send('ok'));
  app.get('/hold', async (req, res) => {
    arrived++;
    await gate();
    res.status(askedStatus(req.url)).send('held');
  });
  app.get('/stream', (_req, res) => {
    res.write('first;');
    void gate().then(() => res.end('last'));
  });
  app.get('/throw', () => {
    throw new Error('handler failed');
  });
  app.get('/trailer', (req, res) => {
    res.setHeader('trailer', 'x-actual');
    res.write('body;');
    res.addTrailers({ 'x-actual': actualOf(req.url) });
    res.end();
  });
  // Express's own error handler answers 500 (and logs to stderr, kept quiet here).
  app.use((_error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).send('failed');
  });
  return listen(createServer(app));
};

const startFastify: Start = async (limiter, counting) => {
  const app = Fastify();
  await app.register(floodgate, { limiter, ...counting });
  app.get('/ok', async () => 'ok');
  app.get('/hold', async (request, reply) => {
    arrived++;
    await gate();
    return reply.code(askedStatus(request.url)).send('held');
  });
  app.get('/stream', (_request, reply) => {
    const body = new PassThrough();
    body.write('first;');
    void gate().then(() => body.end('last'));
    return reply.send(body);
  });
  app.get('/throw', async () => {
    throw new Error('handler failed');
  });
  app.get('/trailer', (request, reply) => {
    reply.trailer('x-actual', (_reply, _payload, done) => done(null, actualOf(request.url)));
    const body = new PassThrough();
    body.end('body;');
    return reply.send(body);
  });
  await app.ready();
  return listen(createServer((req, res) => app.routing(req, res)));
};

const startNode: Start = async (limiter, counting) => {
  const guard = createHttpGuard({ limiter, ...counting });
  return listen(
    createServer(async (req, res) => {
      if (!(await guard(req, res))) return;
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/hold') {
        arrived++;
        await gate();
        res.statusCode = askedStatus(req.url);
        res.end('held');
      } else if (path === '/stream') {
        res.write('first;');
        await gate();
        res.end('last');
      } else if (path === '/throw') {
        res.destroy(new Error('handler failed'));
      } else if (path === '/trailer') {
        res.setHeader('trailer', 'x-actual');
        res.write('body;');
        res.addTrailers({ 'x-actual': actualOf(req.url) });
        res.end();
      } else {
        res.end('ok');
      }
    }),
  );
};

/** A Fetch API server as Bun and Deno run one: the request's signal aborts when its client goes. */
const startFetch: Start = async (limiter, counting) => {
  const guard = createFetchGuard({ limiter, ...counting });
  async function handle(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === '/throw') throw new Error('handler failed');
    if (path === '/hold') {
      arrived++;
      await gate();
      return new Response('held', { status: askedStatus(request.url) });
    }
    if (path !== '/stream') return new Response('ok');
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('first;'));
        await gate();
        controller.enqueue(new TextEncoder().encode('last'));
        controller.close();
      },
    });
    return new Response(body);
  }
  return hostFetchGuard(guard, handle);
};

/** GET `path`: the status and RateLimit-Remaining once the response has ended. */
async function get(app: App, path: string): Promise<{ status: number; remaining: number }> {
  const response = await fetch(`${app.url}${path}`);
  await response.arrayBuffer();
  return { status: response.status, remaining: integerField(response, 'RateLimit-Remaining') };
}

let prefixes = 0;
let app: App | undefined;
afterEach(async () => {
  for (const open of gates) open();
  gates = [];
  arrived = 0;
  await app?.close();
  app = undefined;
});

/** A Redis limiter whose settles and refunds can be awaited: `settled(n)` waits until `n` have been applied. */
function watchedLimiter(rules: RuleOptions | RuleOptions[]) {
  const limiter = createLimiter({
    rules,
    store: redisStore({ client }),
    prefix: `outcome-${process.pid}-${prefixes++}`,
    timeout: '10s',
  });
  return { limiter, settled: watchSettles(limiter) };
}

const minute = (limit: number): RuleOptions => ({
  name: 'minute',
  algorithm: 'sliding-log',
  limit,
  window: '1m',
});
const tokens: RuleOptions = { name: 'tokens', algorithm: 'token-bucket', limit: 10, window: '1h' };

const ADAPTERS: [string, Start][] = [
  ['express', startExpress],
  ['fastify', startFastify],
  ['node', startNode],
  ['fetch', startFetch],
];

describe.each(ADAPTERS)('%s on Redis', (_name, start) => {
  it('50 concurrent requests with their responses held never pass the limit (skipFailedRequests)', async () => {
    const { limiter, settled } = watchedLimiter(minute(40));
    app = await start(limiter, { skipFailedRequests: true });
    const denied: number[] = [];
    const requests = Array.from({ length: 50 }, () =>
      statusOf(app as App, '/hold?status=500').then((status) => {
        if (status === 429) denied.push(status);
        return status;
      }),
    );
    // Every request has been checked (40 held in the handler, 10 denied) before any is released.
    await vi.waitFor(
      () => {
        expect(arrived).toBe(40);
        expect(denied).toHaveLength(10);
      },
      { timeout: 10_000 },
    );
    for (const open of gates) open();
    gates = [];
    const statuses = await Promise.all(requests);
    expect(statuses.filter((status) => status === 500)).toHaveLength(40);
    expect(statuses.filter((status) => status === 429)).toHaveLength(10);
    // Failed, so all 40 are given back.
    await settled(40);
    expect(await get(app, '/ok')).toEqual({ status: 200, remaining: 39 });
  });

  it('a client that aborts before the response ends counts as failed (skipFailedRequests gives it back)', async () => {
    const { limiter, settled } = watchedLimiter(minute(1));
    app = await start(limiter, { skipFailedRequests: true });
    const stream = await startStream(app, '/stream');
    expect(stream.status).toBe(200);
    expect((await get(app, '/ok')).status).toBe(429);
    stream.abort();
    await settled(1);
    expect(await get(app, '/ok')).toEqual({ status: 200, remaining: 0 });
  });
});

// node:http has no handler of its own to throw: its users destroy the response (an abort, above).
describe.each(ADAPTERS.filter(([name]) => name !== 'node'))(
  '%s on Redis, a handler that throws',
  (_name, start) => {
    it('counts as failed (skipFailedRequests gives it back)', async () => {
      const { limiter, settled } = watchedLimiter(minute(1));
      app = await start(limiter, { skipFailedRequests: true });
      expect((await fetch(`${app.url}/throw`)).status).toBe(500);
      await settled(1);
      expect(await get(app, '/ok')).toEqual({ status: 200, remaining: 0 });
    });
  },
);

// A Fetch API Response carries no trailers.
describe.each(ADAPTERS.filter(([name]) => name !== 'fetch'))('%s on Redis, a trailer', (_name, start) => {
  it("settle: 'x-actual' reads the HTTP trailer of a chunked response", async () => {
    const { limiter, settled } = watchedLimiter(tokens);
    app = await start(limiter, { settle: 'x-actual' });
    expect((await get(app, '/trailer?actual=6')).remaining).toBe(9);
    await settled(1);
    // 6 taken in all (1 reserved, 5 charged), then 1 more.
    expect(await get(app, '/ok')).toEqual({ status: 200, remaining: 3 });
  });
});

describe('a request that does not count is given back whole', () => {
  it("skipFailedRequests gives back a counts: 'requests' rule's request too, not only the cost (Express, RPM + TPM)", async () => {
    const { limiter, settled } = watchedLimiter([
      { name: 'rpm', algorithm: 'fixed-window', counts: 'requests', limit: 2, window: '1m' },
      { name: 'tpm', algorithm: 'fixed-window', limit: 100, window: '1m' },
    ]);
    const app = express();
    app.use(rateLimit({ limiter, cost: 30, skipFailedRequests: true }));
    app.get('/ok', (_req, res) => void res.send('ok'));
    app.get('/throw', () => {
      throw new Error('handler failed');
    });
    const started = await listen(createServer(app));
    try {
      for (let i = 1; i <= 3; i++) {
        expect(await statusOf(started, '/throw')).toBe(500);
        await settled(i);
      }
      // Three failures took nothing: rpm has both requests, tpm all 100 tokens.
      expect(await get(started, '/ok')).toEqual({ status: 200, remaining: 1 });
    } finally {
      await started.close();
    }
  });
});

describe('settle as a function, and Fastify hooks', () => {
  it('settle: (req, res) => actual cost, from what the handler left on the response (Express)', async () => {
    const { limiter, settled } = watchedLimiter(tokens);
    const server = express();
    server.use(
      rateLimit({
        limiter,
        cost: 5,
        settle: (_req, res) => Number(res.locals.usedTokens),
      }),
    );
    server.get('/', (_req, res) => {
      res.locals.usedTokens = 2;
      res.send('done');
    });
    app = await listen(createServer(server));
    expect((await get(app, '/')).remaining).toBe(5);
    await settled(1);
    // 5 reserved, 2 used: 3 given back, then 5 more reserved.
    expect(await get(app, '/')).toEqual({ status: 200, remaining: 3 });
  });

  it('requestWasSuccessful (async, given the framework response) decides instead of the status', async () => {
    const { limiter, settled } = watchedLimiter(minute(2));
    const server = express();
    server.use(
      rateLimit({
        limiter,
        skipFailedRequests: true,
        // A 404 is an answer, not a failure, for this API.
        requestWasSuccessful: async (_req, res) => res.statusCode === 404 || res.statusCode < 400,
      }),
    );
    server.get('/missing', (_req, res) => void res.status(404).send('no such thing'));
    server.get('/down', (_req, res) => void res.status(503).send('down'));
    app = await listen(createServer(server));
    expect(await get(app, '/missing')).toEqual({ status: 404, remaining: 1 });
    expect(await get(app, '/down')).toEqual({ status: 503, remaining: 0 });
    await settled(1);
    // The 404 kept its unit, the 503 gave its back.
    expect(await get(app, '/missing')).toEqual({ status: 404, remaining: 0 });
    expect((await get(app, '/missing')).status).toBe(429);
  });

  it("hook: 'preHandler' keys requests by the user an auth hook put on the request", async () => {
    const { limiter } = watchedLimiter(minute(1));
    const server = Fastify();
    server.decorateRequest('user', '');
    await server.register(floodgate, {
      limiter,
      hook: 'preHandler',
      key: (request) => `user:${(request as typeof request & { user: string }).user}`,
    });
    // Registered after the limiter: in onRequest it would run too late for an onRequest limiter.
    server.addHook('onRequest', async (request) => {
      (request as typeof request & { user: string }).user = String(
        request.headers.authorization ?? 'anonymous',
      );
    });
    server.get('/', async () => 'ok');
    await server.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
    app = { url, port: 0, close: () => server.close() };
    const as = async (user: string) => (await fetch(url, { headers: { authorization: user } })).status;
    expect(await as('alice')).toBe(200);
    expect(await as('alice')).toBe(429);
    expect(await as('bob')).toBe(200);
    const keys = await client.keys(`${limiter.prefix}*`);
    expect(keys.some((key) => key.includes('user:alice'))).toBe(true);
    expect(keys.some((key) => key.includes('user:bob'))).toBe(true);
  });

  it("hook: anything but 'onRequest' or 'preHandler' is refused at registration", async () => {
    const server = Fastify();
    await expect(
      server.register(floodgate, { rules: minute(1), hook: 'onSend' as never }).ready(),
    ).rejects.toThrow(new RangeError(`floodgate hook: "onSend" must be 'onRequest' or 'preHandler'`));
    await server.close();
  });
});

describe('headers of a response that tells its settling in its head', () => {
  it('node:http: writeHead with an object or a flat array of fields; RPM + TPM, both rules in the head', async () => {
    const { limiter, settled } = watchedLimiter([
      { name: 'rpm', algorithm: 'sliding-log', counts: 'requests', limit: 10, window: '1m' },
      { name: 'tpm', algorithm: 'sliding-log', limit: 100, window: '1m' },
    ]);
    const guard = createHttpGuard({ limiter, cost: 10, settle: 'x-actual', headers: ['draft-10', 'legacy'] });
    app = await listen(
      createServer(async (req, res) => {
        if (!(await guard(req, res))) return;
        if (req.url === '/object') res.writeHead(200, { 'x-actual': '40' });
        else res.writeHead(200, 'OK', ['x-actual', '100']);
        res.end('done');
      }),
    );
    const remaining = (response: Response) =>
      listField(response, 'RateLimit').map((item) => [item.name, item.params.r]);
    const object = await fetch(`${app.url}/object`);
    await object.arrayBuffer();
    // 10 reserved, 40 used: tpm shows 30 more taken; rpm (1 a request) is as checked, and binds.
    expect(remaining(object)).toEqual([
      ['rpm', 9],
      ['tpm', 60],
    ]);
    expect([
      integerField(object, 'X-RateLimit-Limit'),
      integerField(object, 'X-RateLimit-Remaining'),
    ]).toEqual([10, 9]);
    await settled(1);
    const array = await fetch(`${app.url}/array`);
    await array.arrayBuffer();
    // 50 left after the reservation, 90 more used: tpm is out and binds.
    expect(remaining(array)).toEqual([
      ['rpm', 8],
      ['tpm', 0],
    ]);
    expect([integerField(array, 'X-RateLimit-Limit'), integerField(array, 'X-RateLimit-Remaining')]).toEqual([
      100, 0,
    ]);
    expect(array.headers.get('x-actual')).toBe('100');
  });

  it('Express, two limiters: the one that gives a failed request back rewrites only its own list items', async () => {
    const outer = watchedLimiter({ name: 'outer', algorithm: 'fixed-window', limit: 5, window: '1m' });
    const inner = watchedLimiter({ name: 'inner', algorithm: 'fixed-window', limit: 3, window: '1m' });
    const server = express();
    server.use(
      rateLimit({ limiter: outer.limiter, skipFailedRequests: true, headers: ['draft-10', 'legacy'] }),
    );
    server.use(rateLimit({ limiter: inner.limiter, headers: ['draft-10', 'legacy'] }));
    server.get('/down', (_req, res) => void res.status(503).send('down'));
    app = await listen(createServer(server));
    const response = await fetch(`${app.url}/down`);
    await response.arrayBuffer();
    expect(response.status).toBe(503);
    expect(listField(response, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([
      ['outer', 5],
      ['inner', 2],
    ]);
    // The single-valued fields show the inner limiter (2 left): not the outer one's to rewrite.
    expect(integerField(response, 'X-RateLimit-Remaining')).toBe(2);
    expect(integerField(response, 'X-RateLimit-Limit')).toBe(3);
  });
});
