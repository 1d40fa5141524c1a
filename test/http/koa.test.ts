import { createServer } from 'node:http';
import type { Redis } from 'ioredis';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/koa.js';
import { createLimiter, memoryStore, redisStore } from '../../src/index.js';
import { type App, listen } from './support/apps.js';
import { listField } from './support/client.js';
import { runAdapterSuite, runAdapterSuiteOnStores } from './support/suite.js';

let client: Redis;
runAdapterSuiteOnStores('koa', (started) => {
  client = started;
});
runAdapterSuite('koa2', { name: 'memory', store: () => memoryStore() });

describe('koa specifics', () => {
  const apps: App[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  const sliding = (name: string, limit: number) =>
    createLimiter({
      rules: { name, algorithm: 'sliding-log', limit, window: '1m' },
      store: redisStore({ client }),
      prefix: `k-${name}-${Math.random().toString(36).slice(2)}`,
      timeout: '10s',
    });

  it('two middlewares on one request: draft-10 lists both, ctx.state.rateLimit is the stricter', async () => {
    const app = new Koa();
    app.use(rateLimit({ limiter: sliding('global', 10), headers: 'draft-10' }));
    app.use(rateLimit({ limiter: sliding('route', 2), headers: 'draft-10' }));
    app.use((ctx) => {
      ctx.body = { rule: ctx.state.rateLimit?.rule, remaining: ctx.state.rateLimit?.remaining };
    });
    const started = await listen(createServer(app.callback()));
    apps.push(started);
    const first = await fetch(started.url);
    expect(await first.json()).toEqual({ rule: 'route', remaining: 1 });
    expect(listField(first, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([
      ['global', 9],
      ['route', 1],
    ]);
  });

  it("a failing cost function reaches Koa's error handling (500); the server keeps limiting", async () => {
    const app = new Koa();
    app.silent = true;
    app.use(
      rateLimit({
        limiter: sliding('errors', 1),
        cost: (ctx) => {
          if (ctx.query.boom !== undefined) throw new Error('cost lookup failed');
          return 1;
        },
      }),
    );
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const started = await listen(createServer(app.callback()));
    apps.push(started);
    expect((await fetch(`${started.url}/?boom`)).status).toBe(500);
    expect((await fetch(started.url)).status).toBe(200);
    expect((await fetch(started.url)).status).toBe(429);
  });
});
