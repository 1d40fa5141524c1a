import { createServer } from 'node:http';
import express from 'express';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/express.js';
import { createLimiter, redisStore } from '../../src/index.js';
import { type App, listen } from './support/apps.js';
import { integerField, listField } from './support/client.js';
import { runAdapterSuiteOnStores } from './support/suite.js';

let client: Redis;
runAdapterSuiteOnStores('express', (started) => {
  client = started;
});

describe('express specifics', () => {
  const servers: App[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((app) => app.close()));
  });
  async function serve(app: express.Express): Promise<App> {
    const started = await listen(createServer(app));
    servers.push(started);
    return started;
  }
  const sliding = (name: string, limit: number) =>
    createLimiter({
      rules: { name, algorithm: 'sliding-log', limit, window: '1m' },
      store: redisStore({ client }),
      prefix: `x-${name}-${Math.random().toString(36).slice(2)}`,
      timeout: '10s',
    });

  it('a router with its own rateLimit adds a policy: draft-10 lists both, draft-6 keeps the stricter', async () => {
    const app = express();
    app.use(rateLimit({ limiter: sliding('global', 10), headers: ['draft-10', 'legacy'] }));
    const api = express.Router();
    api.use(rateLimit({ limiter: sliding('api', 2), headers: ['draft-10', 'legacy'] }));
    api.get('/thing', (req, res) => {
      res.json({ rule: req.rateLimit?.rule, remaining: req.rateLimit?.remaining });
    });
    app.use('/api', api);
    app.get('/other', (req, res) => {
      res.json({ rule: req.rateLimit?.rule, remaining: req.rateLimit?.remaining });
    });
    const { url } = await serve(app);

    const first = await fetch(`${url}/api/thing`);
    expect(await first.json()).toEqual({ rule: 'api', remaining: 1 });
    expect(listField(first, 'RateLimit-Policy').map((item) => item.name)).toEqual(['global', 'api']);
    expect(listField(first, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([
      ['global', 9],
      ['api', 1],
    ]);
    expect(integerField(first, 'X-RateLimit-Limit')).toBe(2);
    expect(integerField(first, 'X-RateLimit-Remaining')).toBe(1);

    const other = await fetch(`${url}/other`);
    expect(await other.json()).toEqual({ rule: 'global', remaining: 8 });
    expect(listField(other, 'RateLimit').map((item) => item.name)).toEqual(['global']);

    expect((await fetch(`${url}/api/thing`)).status).toBe(200);
    const denied = await fetch(`${url}/api/thing`);
    expect(denied.status).toBe(429);
    expect(listField(denied, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([
      ['global', 6],
      ['api', 0],
    ]);
    expect(((await denied.json()) as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'api',
    ]);
  });

  it('RPM + TPM with the cost from the request: each rule in its own units; the headers name whichever runs out first', async () => {
    const limiter = createLimiter({
      rules: [
        { name: 'rpm', algorithm: 'sliding-log', counts: 'requests', limit: 3, window: '1m' },
        { name: 'tpm', algorithm: 'sliding-log', limit: 1000, window: '1m' },
      ],
      store: redisStore({ client }),
      prefix: `x-llm-${Math.random().toString(36).slice(2)}`,
      timeout: '10s',
    });
    const app = express();
    app.use(
      rateLimit({
        limiter,
        key: (req) => req.get('x-user') ?? 'anonymous',
        cost: (req) => Number(req.get('x-tokens')),
        headers: ['draft-10', 'legacy'],
      }),
    );
    app.post('/chat', (_req, res) => {
      res.json({ ok: true });
    });
    const { url } = await serve(app);
    const chat = (user: string, tokens: number) =>
      fetch(`${url}/chat`, { method: 'POST', headers: { 'x-user': user, 'x-tokens': String(tokens) } });
    /** Status, the binding rule's legacy headers, and every rule's remaining units. */
    const seen = async (response: Response) => ({
      status: response.status,
      limit: integerField(response, 'X-RateLimit-Limit'),
      remaining: integerField(response, 'X-RateLimit-Remaining'),
      rules: listField(response, 'RateLimit').map((item) => [item.name, item.params.r]),
      violated:
        response.status === 429
          ? ((await response.json()) as { 'violated-policies': string[] })['violated-policies']
          : [],
    });

    // Tokens run out first: 600 of 1000, then 500 more is over tpm while rpm has 2 requests left.
    const first = await chat('tokens', 600);
    expect(listField(first, 'RateLimit-Policy').map((item) => [item.name, item.params.q])).toEqual([
      ['rpm', 3],
      ['tpm', 1000],
    ]);
    expect(await seen(first)).toEqual({
      status: 200,
      limit: 3,
      remaining: 2,
      rules: [
        ['rpm', 2],
        ['tpm', 400],
      ],
      violated: [],
    });
    expect(await seen(await chat('tokens', 500))).toEqual({
      status: 429,
      limit: 1000,
      remaining: 400,
      rules: [
        ['rpm', 2],
        ['tpm', 400],
      ],
      violated: ['tpm'],
    });

    // Requests run out first: three small requests, then a fourth is over rpm with 970 tokens left.
    for (const left of [2, 1]) expect((await seen(await chat('requests', 10))).remaining).toBe(left);
    expect(await seen(await chat('requests', 10))).toMatchObject({ status: 200, remaining: 0 });
    expect(await seen(await chat('requests', 10))).toEqual({
      status: 429,
      limit: 3,
      remaining: 0,
      rules: [
        ['rpm', 0],
        ['tpm', 970],
      ],
      violated: ['rpm'],
    });
  });

  it('passes a failing key or cost function to the error handler; the server keeps serving', async () => {
    const app = express();
    app.use(
      rateLimit({
        limiter: sliding('errors', 5),
        cost: (req) => {
          if (req.query.boom !== undefined) throw new Error('cost lookup failed');
          return Number(req.query.cost ?? 1);
        },
      }),
    );
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(error.message);
    });
    const { url } = await serve(app);
    const boom = await fetch(`${url}/?boom`);
    expect(boom.status).toBe(500);
    expect(await boom.text()).toBe('cost lookup failed');
    const bad = await fetch(`${url}/?cost=-3`);
    expect(bad.status).toBe(500);
    expect(await bad.text()).toMatch(/^cost: -3 must be an integer/);
    expect((await fetch(url)).status).toBe(200);
  });
});
