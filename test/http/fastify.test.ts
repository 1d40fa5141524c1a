import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { floodgate } from '../../src/http/fastify.js';
import { createLimiter, type RuleOptions, redisStore } from '../../src/index.js';
import { integerField, listField } from './support/client.js';
import { runAdapterSuiteOnStores } from './support/suite.js';

let client: Redis;
runAdapterSuiteOnStores('fastify', (started) => {
  client = started;
});

describe('fastify specifics', () => {
  const apps: FastifyInstance[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  async function listen(app: FastifyInstance): Promise<string> {
    apps.push(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  }
  let n = 0;
  const store = () => redisStore({ client });
  const prefix = () => `f-${process.pid}-${n++}`;
  const log = (name: string, limit: number): RuleOptions => ({
    name,
    algorithm: 'sliding-log',
    limit,
    window: '1m',
  });
  const rateLimitOf = (request: FastifyRequest) => ({
    rule: request.rateLimit?.rule ?? null,
    remaining: request.rateLimit?.remaining ?? null,
  });

  it('adds route limiters after the app-wide one; false exempts a route; both policies are listed', async () => {
    const app = Fastify();
    await app.register(floodgate, {
      rules: log('app', 10),
      store: store(),
      prefix: prefix(),
      headers: 'draft-10',
    });
    app.get('/strict', { config: { rateLimit: { rules: log('strict', 2) } } }, async (request) =>
      rateLimitOf(request),
    );
    app.get('/free', { config: { rateLimit: false } }, async (request) => rateLimitOf(request));
    app.get('/plain', async (request) => rateLimitOf(request));
    const url = await listen(app);

    const strict = await fetch(`${url}/strict`);
    expect(await strict.json()).toEqual({ rule: 'strict', remaining: 1 });
    // The route inherits the app's options (here: headers) and lists its policy after the app's.
    expect(listField(strict, 'RateLimit-Policy')).toEqual([
      { name: 'app', params: { q: 10, w: 60 } },
      { name: 'strict', params: { q: 2, w: 60 } },
    ]);
    expect(listField(strict, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([
      ['app', 9],
      ['strict', 1],
    ]);

    for (let i = 0; i < 3; i++) {
      const free = await fetch(`${url}/free`);
      expect(await free.json()).toEqual({ rule: null, remaining: null });
      expect(free.headers.get('ratelimit')).toBeNull();
    }
    expect(await (await fetch(`${url}/plain`)).json()).toEqual({ rule: 'app', remaining: 8 });
    expect((await fetch(`${url}/strict`)).status).toBe(200);
    const denied = await fetch(`${url}/strict`);
    expect(denied.status).toBe(429);
    expect(((await denied.json()) as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'strict',
    ]);
    // The route's own counts live under their own prefix: the app-wide count went on.
    expect(await (await fetch(`${url}/plain`)).json()).toEqual({ rule: 'app', remaining: 5 });
    const keys = await client.keys('*:GET:/strict:*');
    expect(keys.length).toBeGreaterThan(0);
  });

  it('with draft-6, the stricter of the app and route decisions fills the single-valued fields', async () => {
    const app = Fastify();
    await app.register(floodgate, { rules: log('app', 3), store: store(), prefix: prefix() });
    app.get('/loose', { config: { rateLimit: { rules: log('loose', 100) } } }, async (request) =>
      rateLimitOf(request),
    );
    const url = await listen(app);
    const response = await fetch(`${url}/loose`);
    expect(await response.json()).toEqual({ rule: 'app', remaining: 2 });
    expect(integerField(response, 'RateLimit-Limit')).toBe(3);
    expect(integerField(response, 'RateLimit-Remaining')).toBe(2);
    expect(listField(response, 'RateLimit-Policy')).toEqual([
      { name: 3, params: { w: 60 } },
      { name: 100, params: { w: 60 } },
    ]);
  });

  it('global: false limits only the routes that ask for it, with the app options as defaults', async () => {
    const app = Fastify();
    await app.register(floodgate, {
      global: false,
      store: store(),
      prefix: prefix(),
      key: async () => 'everyone',
    });
    app.get('/open', async (request) => rateLimitOf(request));
    app.get('/login', { config: { rateLimit: { rules: log('login', 1) } } }, async (request) =>
      rateLimitOf(request),
    );
    const url = await listen(app);
    for (let i = 0; i < 3; i++)
      expect((await fetch(`${url}/open`)).headers.get('ratelimit-limit')).toBeNull();
    expect((await fetch(`${url}/login`)).status).toBe(200);
    // Keyed by the inherited key function, so another client (API key) is limited too.
    expect((await fetch(`${url}/login`, { headers: { 'x-api-key': 'other' } })).status).toBe(429);
  });

  it('HEAD shares the GET route limiter; one route options object on two URLs counts each URL apart', async () => {
    const app = Fastify();
    await app.register(floodgate, { global: false, store: store(), prefix: prefix() });
    const shared = { rules: log('per-route', 1) };
    app.get('/a', { config: { rateLimit: shared } }, async () => 'a');
    app.get('/b', { config: { rateLimit: shared } }, async () => 'b');
    const url = await listen(app);
    expect((await fetch(`${url}/a`)).status).toBe(200);
    expect((await fetch(`${url}/a`, { method: 'HEAD' })).status).toBe(429);
    expect((await fetch(`${url}/b`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${url}/b`)).status).toBe(429);
  });

  it('a route given its own limiter object uses it as is: two routes, one bucket', async () => {
    const app = Fastify();
    await app.register(floodgate, { global: false });
    const limiter = createLimiter({ rules: log('together', 2) });
    app.get('/one', { config: { rateLimit: { limiter } } }, async () => 'one');
    app.get('/two', { config: { rateLimit: { limiter } } }, async () => 'two');
    const url = await listen(app);
    expect((await fetch(`${url}/one`)).status).toBe(200);
    expect((await fetch(`${url}/two`)).status).toBe(200);
    expect((await fetch(`${url}/one`)).status).toBe(429);
  });

  it('a failing cost function becomes a 500 from the error handler; the server keeps serving', async () => {
    const app = Fastify();
    await app.register(floodgate, {
      rules: log('errors', 5),
      cost: (request) => {
        if (request.url.includes('boom')) throw new Error('cost lookup failed');
        return 1;
      },
    });
    app.get('/*', async () => 'ok');
    const url = await listen(app);
    expect((await fetch(`${url}/boom`)).status).toBe(500);
    expect((await fetch(`${url}/fine`)).status).toBe(200);
  });
});

describe('fastify registered twice', () => {
  it('applies a route limiter once, whichever registrations see the route', async () => {
    const app = Fastify();
    await app.register(floodgate, {
      rules: { name: 'outer', algorithm: 'sliding-log', limit: 100, window: '1m' },
    });
    await app.register(async (child) => {
      await child.register(floodgate, { global: false, headers: 'draft-10' });
      child.get(
        '/x',
        {
          config: {
            rateLimit: {
              rules: { name: 'route', algorithm: 'sliding-log', limit: 3, window: '1m' },
              // One store for both registrations: a second route hook would count twice.
              store: redisStore({ client }),
              prefix: `twice-${process.pid}`,
            },
          },
        },
        async (request) => request.rateLimit?.remaining ?? null,
      );
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/x`;
      expect(await (await fetch(url)).json()).toBe(2);
      expect(await (await fetch(url)).json()).toBe(1);
    } finally {
      await app.close();
    }
  });
});
