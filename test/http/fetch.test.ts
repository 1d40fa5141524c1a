import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { apiKeyOrAddress, createFetchGuard } from '../../src/http/fetch.js';
import { integerField, listField, retryAfter } from './support/client.js';
import { runAdapterSuiteOnStores } from './support/suite.js';

let _client: Redis;
runAdapterSuiteOnStores('fetch', (started) => {
  _client = started;
});

describe('fetch guard on Request objects', () => {
  const rules = { name: 'pair', algorithm: 'sliding-log', limit: 2, window: '1m' } as const;
  const request = (headers: Record<string, string> = {}) => new Request('http://api.test/v1', { headers });

  it('returns null while allowed, then a 429 Response; decisionFor and withHeaders expose the decision', async () => {
    const guard = createFetchGuard({ rules, headers: ['draft-10', 'legacy'] });
    const first = request();
    expect(await guard(first, { ip: '198.51.100.7' })).toBeNull();
    expect(guard.decisionFor(first)?.remaining).toBe(1);
    const answered = guard.withHeaders(first, new Response('ok'));
    expect(listField(answered, 'RateLimit')).toEqual([{ name: 'pair', params: { r: 1, t: 60 } }]);
    expect(integerField(answered, 'X-RateLimit-Remaining')).toBe(1);

    // A response with immutable headers (as fetch() returns) is copied, body and status kept.
    const second = request();
    expect(await guard(second, { ip: '198.51.100.7' })).toBeNull();
    const redirect = guard.withHeaders(second, Response.redirect('http://api.test/elsewhere', 307));
    expect(redirect.status).toBe(307);
    expect(redirect.headers.get('location')).toBe('http://api.test/elsewhere');
    expect(integerField(redirect, 'X-RateLimit-Remaining')).toBe(0);

    const denied = (await guard(request(), { ip: '198.51.100.7' })) as Response;
    expect(denied.status).toBe(429);
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    expect(retryAfter(denied)).toBeGreaterThanOrEqual(1);
    expect(((await denied.json()) as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'pair',
    ]);
    // Another address is another client; an unchecked request has no decision.
    expect(await guard(request(), { ip: '198.51.100.8' })).toBeNull();
    expect(guard.decisionFor(request())).toBeUndefined();
    const untouched = new Response('x');
    expect(guard.withHeaders(request(), untouched)).toBe(untouched);
  });

  it('two guards on one request: withHeaders of each merges the list fields, draft-6 keeps the stricter', async () => {
    const global = createFetchGuard({ rules: { ...rules, name: 'global', limit: 10 } });
    const route = createFetchGuard({ rules: { ...rules, name: 'route', limit: 3 } });
    const checked = request();
    expect(await global(checked, { ip: '192.0.2.9' })).toBeNull();
    expect(await route(checked, { ip: '192.0.2.9' })).toBeNull();
    const response = route.withHeaders(checked, global.withHeaders(checked, new Response('ok')));
    expect(listField(response, 'RateLimit-Policy')).toEqual([
      { name: 10, params: { w: 60 } },
      { name: 3, params: { w: 60 } },
    ]);
    expect(integerField(response, 'RateLimit-Remaining')).toBe(2);
  });

  it('shares one bucket among requests whose address is unknown', async () => {
    const guard = createFetchGuard({
      rules,
      key: apiKeyOrAddress({ header: 'x-api-key', known: (key) => key === 'known-client' }),
    });
    expect(await guard(request())).toBeNull();
    expect(await guard(request({ 'x-forwarded-for': '203.0.113.1' }))).toBeNull();
    expect((await guard(request({ 'x-forwarded-for': '203.0.113.2' })))?.status).toBe(429);
    expect(await guard(request({ 'x-api-key': 'known-client' }))).toBeNull();
    expect((await guard(request({ 'x-api-key': 'unknown-client' })))?.status).toBe(429);
  });

  it('reads the address from the ip option (e.g. a CDN header) and trusts proxies as told', async () => {
    const guard = createFetchGuard({ rules, ip: (req) => req.headers.get('cf-connecting-ip') });
    const from = (ip: string) => guard(request({ 'cf-connecting-ip': ip }));
    expect(await from('203.0.113.1')).toBeNull();
    expect(await from('203.0.113.1')).toBeNull();
    expect((await from('203.0.113.1'))?.status).toBe(429);
    expect(await from('203.0.113.2')).toBeNull();

    const behindProxy = createFetchGuard({ rules: { ...rules, limit: 1 }, trustProxy: '10.0.0.0/8' });
    const via = (peer: string, xff: string) => behindProxy(request({ 'x-forwarded-for': xff }), { ip: peer });
    expect(await via('10.1.1.1', '203.0.113.9')).toBeNull();
    expect((await via('10.1.1.2', '203.0.113.9'))?.status).toBe(429);
    expect(await via('10.1.1.1', '203.0.113.10')).toBeNull();
    // Not from the proxy: the forged header is ignored, the peer is the client.
    expect(await via('198.51.100.1', '203.0.113.11')).toBeNull();
    expect((await via('198.51.100.1', '203.0.113.12'))?.status).toBe(429);
  });

  it("adds the headers to onLimited's response unless it sets them itself", async () => {
    const guard = createFetchGuard({
      rules: { ...rules, limit: 1 },
      onLimited: (_request, decision) =>
        Response.json(
          { wait: decision.retryAfterMs > 0 },
          { status: 503, headers: { 'Retry-After': '120' } },
        ),
    });
    expect(await guard(request(), { ip: '192.0.2.1' })).toBeNull();
    const limited = (await guard(request(), { ip: '192.0.2.1' })) as Response;
    expect(limited.status).toBe(503);
    expect(await limited.json()).toEqual({ wait: true });
    expect(limited.headers.get('retry-after')).toBe('120');
    expect(limited.headers.get('cache-control')).toBe('no-store');
    expect(integerField(limited, 'RateLimit-Remaining')).toBe(0);
  });

  it('rejects header values fetch itself would refuse before they reach the guard', () => {
    // The Fetch API refuses control characters in header values; the guard never sees them.
    expect(() => request({ 'x-api-key': 'a\r\nInjected: 1' })).toThrow(TypeError);
  });
});
