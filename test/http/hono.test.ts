import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono } from 'hono';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/hono.js';
import { createLimiter, redisStore } from '../../src/index.js';
import { listen } from './support/apps.js';
import { header, integerField, listField } from './support/client.js';
import { runAdapterSuiteOnStores } from './support/suite.js';

let client: Redis;
runAdapterSuiteOnStores('hono', (started) => {
  client = started;
});

describe('hono specifics', () => {
  const sliding = (name: string, limit: number) =>
    createLimiter({
      rules: { name, algorithm: 'sliding-log', limit, window: '1m' },
      store: redisStore({ client }),
      prefix: `h-${name}-${Math.random().toString(36).slice(2)}`,
      timeout: '10s',
    });

  it('a route rateLimit inside an app-wide one: both policies listed in order, draft-6 keeps the stricter', async () => {
    const app = new Hono();
    app.use(
      rateLimit({ limiter: sliding('global', 10), headers: ['draft-10', 'legacy'], ip: () => '192.0.2.1' }),
    );
    app.use(
      '/api/*',
      rateLimit({ limiter: sliding('api', 1), headers: ['draft-10', 'legacy'], ip: () => '192.0.2.1' }),
    );
    app.get('/api/thing', (c) => c.json({ rule: c.get('rateLimit')?.rule }));
    // A response with immutable headers, as fetch() returns: the headers go on a copy.
    app.get('/moved', () => Response.redirect('http://elsewhere.test/', 307));

    const first = await app.request('/api/thing');
    expect(await first.json()).toEqual({ rule: 'api' });
    expect(listField(first, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([
      ['global', 9],
      ['api', 0],
    ]);
    expect(integerField(first, 'X-RateLimit-Remaining')).toBe(0);
    const denied = await app.request('/api/thing');
    expect(denied.status).toBe(429);
    expect(listField(denied, 'RateLimit-Policy').map((item) => item.name)).toEqual(['global', 'api']);
    expect(header(denied, 'content-type')).toBe('application/problem+json');
    const moved = await app.request('/moved');
    expect(moved.status).toBe(307);
    expect(moved.headers.get('location')).toBe('http://elsewhere.test/');
    expect(listField(moved, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([['global', 7]]);
  });

  it("an inner middleware's onLimited response keeps its own headers; the outer one adds none over them", async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: sliding('outer', 10), ip: () => '192.0.2.2' }));
    app.use(
      rateLimit({
        limiter: sliding('inner', 1),
        ip: () => '192.0.2.2',
        onLimited: () => new Response('slow down', { status: 503, headers: { 'Retry-After': '120' } }),
      }),
    );
    app.get('/', (c) => c.text('ok'));
    expect((await app.request('/')).status).toBe(200);
    const limited = await app.request('/');
    expect(limited.status).toBe(503);
    expect(await limited.text()).toBe('slow down');
    expect(limited.headers.get('retry-after')).toBe('120');
    expect(limited.headers.get('cache-control')).toBe('no-store');
    // Both limiters' policies, as the two middlewares merged them, draft-6's fields the stricter.
    expect(listField(limited, 'RateLimit-Policy')).toEqual([
      { name: 10, params: { w: 60 } },
      { name: 1, params: { w: 60 } },
    ]);
    expect(integerField(limited, 'RateLimit-Limit')).toBe(1);
  });

  it('reads the address from ip (a platform header or getConnInfo); without one, clients share ip:unknown', async () => {
    const limiter = sliding('addresses', 1);
    const app = new Hono();
    app.use('/cdn/*', rateLimit({ limiter, ip: (c) => c.req.header('cf-connecting-ip') }));
    app.use('/bare/*', rateLimit({ limiter }));
    app.all('*', (c) => c.text('ok'));
    const from = (ip: string) => app.request('/cdn/x', { headers: { 'cf-connecting-ip': ip } });
    expect((await from('203.0.113.1')).status).toBe(200);
    expect((await from('203.0.113.1')).status).toBe(429);
    expect((await from('203.0.113.2')).status).toBe(200);
    // app.request() has no socket: no address, one shared bucket.
    expect((await app.request('/bare/x')).status).toBe(200);
    expect((await app.request('/bare/y', { headers: { 'x-forwarded-for': '198.51.100.1' } })).status).toBe(
      429,
    );

    const viaConnInfo = new Hono();
    viaConnInfo.use(rateLimit({ limiter: sliding('conninfo', 1), ip: (c) => getConnInfo(c).remote.address }));
    viaConnInfo.all('*', (c) => c.text('ok'));
    const server = await listen(createAdaptorServer({ fetch: viaConnInfo.fetch }) as Server);
    try {
      expect((await fetch(server.url)).status).toBe(200);
      expect((await fetch(server.url)).status).toBe(429);
    } finally {
      await server.close();
    }
  });

  it('validates its own options by name', () => {
    expect(() =>
      rateLimit({ rules: { algorithm: 'gcra', limit: 1, window: '1s' }, ip: 'x' as never }),
    ).toThrow('ip: expected a function, got "x"');
    expect(() => rateLimit({ rules: { algorithm: 'gcra', limit: 1, window: '1s' }, trustProxy: -1 })).toThrow(
      'trustProxy: -1 must be a whole number of hops from 0 to 64',
    );
  });
});
