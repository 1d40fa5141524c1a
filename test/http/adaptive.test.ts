/**
 * The adapters' `adaptive` option (Express, Fastify, node:http, Koa, Hono), real sockets: a
 * request the adaptive limit refuses gets 503, Retry-After and problem+json at once, before the
 * rate-limit check (it takes nothing from the client's quota); critical requests keep their
 * reserve; a request's place is given back when its response ends, and its latency is learned.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/express.js';
import { floodgate } from '../../src/http/fastify.js';
import { rateLimit as honoRateLimit } from '../../src/http/hono.js';
import { rateLimit as koaRateLimit } from '../../src/http/koa.js';
import { createHttpGuard } from '../../src/http/node.js';
import {
  type AdaptiveLimit,
  type Criticality,
  createAdaptiveLimit,
  createLimiter,
  type Limiter,
} from '../../src/index.js';
import { type App, listen } from './support/apps.js';

/** Requests to /hold wait until the test lets them go. */
let waiting: (() => void)[] = [];
const held = () => new Promise<void>((resolve) => waiting.push(resolve));
const letGo = () => {
  for (const resolve of waiting) resolve();
  waiting = [];
};

interface Parts {
  limiter: Limiter;
  adaptive: AdaptiveLimit;
}
type Start = (parts: Parts) => Promise<App>;

const fromHeader = (value: string | string[] | undefined) =>
  typeof value === 'string' ? (value as Criticality) : undefined;
const nodeCriticality = (req: IncomingMessage) => fromHeader(req.headers['x-priority']);

const ADAPTERS: Record<string, Start> = {
  express: async ({ limiter, adaptive }) => {
    const app = express();
    app.use(rateLimit({ limiter, adaptive, criticality: nodeCriticality }));
    app.get('/hold', async (_req, res) => {
      await held();
      res.send('ok');
    });
    return listen(createServer(app));
  },
  fastify: async ({ limiter, adaptive }) => {
    const app = Fastify();
    await app.register(floodgate, {
      limiter,
      adaptive,
      criticality: (request) => nodeCriticality(request.raw),
    });
    app.get('/hold', async () => {
      await held();
      return 'ok';
    });
    await app.ready();
    return listen(createServer((req, res) => app.routing(req, res)));
  },
  node: async ({ limiter, adaptive }) => {
    const guard = createHttpGuard({ limiter, adaptive, criticality: nodeCriticality });
    return listen(
      createServer(async (req, res) => {
        if (!(await guard(req, res))) return;
        await held();
        res.end('ok');
      }),
    );
  },
  koa: async ({ limiter, adaptive }) => {
    const app = new Koa();
    app.use(koaRateLimit({ limiter, adaptive, criticality: (ctx) => nodeCriticality(ctx.req) }));
    app.use(async (ctx) => {
      await held();
      ctx.body = 'ok';
    });
    return listen(createServer(app.callback()));
  },
  hono: async ({ limiter, adaptive }) => {
    const app = new Hono();
    app.use(
      honoRateLimit({
        limiter,
        adaptive,
        criticality: (c) => c.req.header('x-priority') as Criticality | undefined,
      }),
    );
    app.get('/hold', async (c) => {
      await held();
      return c.text('ok');
    });
    return listen(createAdaptorServer({ fetch: app.fetch }) as Server);
  },
};

let app: App | undefined;
afterEach(async () => {
  letGo();
  await app?.close();
  app = undefined;
});

describe.each(Object.entries(ADAPTERS))('%s: adaptive', (_name, start) => {
  it('sheds past the limit with 503 at once, keeps the critical reserve, and gives places back', async () => {
    // A sliding log: a fixed window's counts restart at the minute, which a run may straddle.
    const limiter = createLimiter({ rules: { algorithm: 'sliding-log', limit: 1000, window: '1h' } });
    // 10 places: 7 for sheddable, 8 for standard, all 10 for critical.
    const adaptive = createAdaptiveLimit({ initial: 10, max: 10 });
    app = await start({ limiter, adaptive });
    const get = (priority: string) => fetch(`${app?.url}/hold`, { headers: { 'x-priority': priority } });
    const standing = Array.from({ length: 8 }, () => get('standard'));
    await expect.poll(() => adaptive.stats().inFlight).toBe(8);

    const shed = await get('standard');
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(shed.headers.get('content-type')).toContain('application/problem+json');
    expect(await shed.json()).toMatchObject({ status: 503, title: 'Service Unavailable' });
    expect((await get('sheddable')).status).toBe(503);

    const critical = get('critical');
    await expect.poll(() => adaptive.stats().inFlight).toBe(9);
    letGo();
    expect((await critical).status).toBe(200);
    for (const response of await Promise.all(standing)) expect(response.status).toBe(200);
    await expect.poll(() => adaptive.stats().inFlight).toBe(0);
    expect(adaptive.stats()).toMatchObject({
      shed: { critical: 0, standard: 1, sheddable: 1 },
      admitted: { critical: 1, standard: 8, sheddable: 0 },
    });
    // A shed request never reached the rate limit: 9 checks, not 11 (a peek answers what one more would leave).
    expect((await limiter.peek('ip:127.0.0.1')).remaining).toBe(1000 - 9 - 1);
  });
});

describe('adaptive options', () => {
  it('refuses what is not an adaptive limit, a criticality without one, and an unknown criticality', () => {
    const limiter = createLimiter({ rules: { algorithm: 'fixed-window', limit: 10, window: '1m' } });
    expect(() => rateLimit({ limiter, adaptive: {} as AdaptiveLimit })).toThrow(
      'rateLimit adaptive: expected an adaptive limit from createAdaptiveLimit, got',
    );
    expect(() => rateLimit({ limiter, criticality: 'critical' })).toThrow(
      'rateLimit criticality: only with adaptive',
    );
    expect(() =>
      rateLimit({ limiter, adaptive: createAdaptiveLimit(), criticality: 'urgent' as Criticality }),
    ).toThrow(
      'rateLimit criticality: "urgent" must be one of critical, standard, sheddable, or a function of the request',
    );
  });
});
