import { createServer } from 'node:http';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpGuard, type HttpGuard, type RateLimitedRequest } from '../../src/http/node.js';
import { redisStore } from '../../src/index.js';
import { listen } from './support/apps.js';
import { runAdapterSuiteOnStores } from './support/suite.js';

let client: Redis;
runAdapterSuiteOnStores('node', (started) => {
  client = started;
});

describe('node:http specifics', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
  });
  async function serve(guard: HttpGuard): Promise<string> {
    const server = createServer(async (req, res) => {
      if (!(await guard(req, res))) return;
      res.end((req as RateLimitedRequest).rateLimit?.rule ?? 'none');
    });
    const app = await listen(server);
    closers.push(app.close);
    return app.url;
  }
  const rules = { name: 'one', algorithm: 'sliding-log', limit: 1, window: '1m' } as const;

  it('groups IPv6 clients behind a trusted proxy by /64 (configurable)', async () => {
    const url = await serve(
      createHttpGuard({ rules, store: redisStore({ client }), prefix: 'n-v6', trustProxy: 'loopback' }),
    );
    const from = (ip: string) => fetch(url, { headers: { 'x-forwarded-for': ip } });
    expect((await from('2001:db8:1:2::1')).status).toBe(200);
    expect((await from('2001:db8:1:2:ffff::9')).status).toBe(429);
    expect((await from('2001:db8:1:3::1')).status).toBe(200);
    expect((await from('::ffff:203.0.113.4')).status).toBe(200);
    expect((await from('203.0.113.4')).status).toBe(429);
    expect(await client.keys('n-v6:*')).toEqual(
      expect.arrayContaining([expect.stringContaining('{ip:2001:db8:1:2::/64}')]),
    );

    const wide = await serve(createHttpGuard({ rules, ipv6Subnet: 48, trustProxy: 1 }));
    expect((await fetch(wide, { headers: { 'x-forwarded-for': '2001:db8:1:2::1' } })).status).toBe(200);
    expect((await fetch(wide, { headers: { 'x-forwarded-for': '2001:db8:1:ffff::1' } })).status).toBe(429);
  });

  it('keys by the socket peer unless the hop is trusted', async () => {
    const url = await serve(createHttpGuard({ rules, trustProxy: ['10.0.0.0/8'] }));
    expect((await fetch(url, { headers: { 'x-forwarded-for': '203.0.113.1' } })).status).toBe(200);
    // 127.0.0.1 is not in the trusted list: the header is ignored.
    expect((await fetch(url, { headers: { 'x-forwarded-for': '203.0.113.2' } })).status).toBe(429);
  });

  it('uses a custom key and an API key header of your choosing, and sets req.rateLimit', async () => {
    const url = await serve(
      createHttpGuard({ rules, apiKeyHeader: 'authorization', apiKeySecret: 'pepper' }),
    );
    const response = await fetch(url, { headers: { authorization: 'token-a' } });
    expect(await response.text()).toBe('one');
    expect((await fetch(url, { headers: { authorization: 'token-b' } })).status).toBe(200);
    expect((await fetch(url, { headers: { authorization: 'token-a' } })).status).toBe(429);
    const byTenant = await serve(
      createHttpGuard({ rules, key: (req) => String(req.headers['x-tenant'] ?? 'anon') }),
    );
    expect((await fetch(byTenant, { headers: { 'x-tenant': 't1' } })).status).toBe(200);
    expect((await fetch(byTenant, { headers: { 'x-tenant': 't1', 'x-api-key': 'ignored' } })).status).toBe(
      429,
    );
  });

  it('calls the key function once per request, sync or async, and counts by what it returns', async () => {
    let calls = 0;
    const syncUrl = await serve(
      createHttpGuard({
        rules,
        key: (req) => {
          calls++;
          return String(req.headers['x-tenant']);
        },
      }),
    );
    expect((await fetch(syncUrl, { headers: { 'x-tenant': 't1' } })).status).toBe(200);
    expect((await fetch(syncUrl, { headers: { 'x-tenant': 't1' } })).status).toBe(429);
    expect(calls).toBe(2);
    const asyncUrl = await serve(
      createHttpGuard({
        rules,
        key: async (req) => {
          calls++;
          return String(req.headers['x-tenant']);
        },
      }),
    );
    expect((await fetch(asyncUrl, { headers: { 'x-tenant': 't2' } })).status).toBe(200);
    expect((await fetch(asyncUrl, { headers: { 'x-tenant': 't2' } })).status).toBe(429);
    expect(calls).toBe(4);
  });

  it('rejects when the key function fails, so the caller decides (here: 500)', async () => {
    const guard = createHttpGuard({
      rules,
      key: () => {
        throw new Error('no tenant');
      },
    });
    const server = createServer(async (req, res) => {
      try {
        if (!(await guard(req, res))) return;
        res.end('ok');
      } catch (error) {
        res.statusCode = 500;
        res.end((error as Error).message);
      }
    });
    const app = await listen(server);
    closers.push(app.close);
    const response = await fetch(app.url);
    expect(response.status).toBe(500);
    expect(await response.text()).toBe('no tenant');
  });
});
