/**
 * `floodgate serve` as operators run it: real gateway processes in front of a real upstream
 * (a node:http server here), on a real Redis, driven with fetch and node:http. Exact limits
 * are asserted with exact numbers.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, rawCommand, startRedisServer } from '../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';
import { type RunningCli, runCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';
import { startUpstream, type Upstream } from './support/upstream.js';

interface Gateway {
  cli: RunningCli;
  url: string;
  /** The admin listener (/metrics, /healthz). */
  admin: string;
}

async function startGateway(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Gateway> {
  const adminPort = String(await freePort());
  const cli = startCli(['serve', '--port', '0', '--admin-port', adminPort, ...args], env);
  // Generous: four gateways start at once on a shared, loaded machine.
  const listening = await cli.waitForLog((line) => line.event === 'listening', 45_000);
  return { cli, url: listening.url as string, admin: listening.admin as string };
}

/** Clients are told apart by address: the gateways trust X-Forwarded-For from loopback. */
const from = (ip: string) => ({ 'x-forwarded-for': ip });

/** A request over node:http, which (unlike fetch) may send hop-by-hop headers. */
function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; agent?: Agent } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string; reusedSocket: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: options.method ?? 'GET',
      headers: options.headers,
      agent: options.agent,
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reusedSocket: req.reusedSocket }),
      );
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

function metric(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const ok = Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`));
    if (ok) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

let redis: RedisServer;
let upstream: Upstream;
let dir: string;
let a: Gateway;
let b: Gateway;
let tiers: Gateway;
let reloading: Gateway;
let reloadConfig: string;
const started: Gateway[] = [];

const TIERS_YAML = `
# Two plans picked by API key; a costly route; a route with its own extra limit; a skip list.
headers: [draft-6, legacy]
trustProxy: loopback
tiers:
  header: x-api-key
  keys:
    key-pro-1: pro
  default: free
plans:
  free:
    - { name: free-minute, limit: 2/1m }
  pro:
    # Exact over any minute: a fixed window would restart at a minute boundary mid-test.
    - { name: pro-minute, limit: 5/1m, algorithm: sliding-log }
routes:
  - { method: POST, path: /expensive, cost: 2 }
  - { name: search, path: /search/*, limit: 1/1m }
skip:
  - GET /public/*
`;

beforeAll(async () => {
  [redis, upstream, dir] = await Promise.all([
    startRedisServer(),
    startUpstream(),
    mkdtemp(join(tmpdir(), 'floodgate-serve-')),
  ]);
  await writeFile(join(dir, 'tiers.yaml'), TIERS_YAML);
  reloadConfig = join(dir, 'reload.json');
  await writeFile(
    reloadConfig,
    JSON.stringify({ upstream: `${upstream.url}/base`, rules: [{ name: 'minute', limit: '2/1m' }] }),
  );
  const proxied = [
    '--upstream',
    `${upstream.url}/base`,
    '--redis',
    redis.url,
    '--limit',
    '4/1m',
    '--trust-proxy',
    'loopback',
    // Exact counts: a check the default 100 ms deadline cut short would be let through (fail open).
    '--store-timeout',
    SLOW_MACHINE_TIMEOUT,
  ];
  [a, b, tiers, reloading] = await Promise.all([
    startGateway(proxied),
    startGateway(proxied),
    startGateway(['--config', join(dir, 'tiers.yaml'), '--upstream', `${upstream.url}/base`]),
    startGateway(['--config', reloadConfig]),
  ]);
  started.push(a, b, tiers, reloading);
});

afterAll(async () => {
  for (const gateway of started) gateway.cli.kill();
  await Promise.all(started.map((gateway) => gateway.cli.exited));
  await Promise.all([redis?.stop(), upstream?.close()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('floodgate serve: reverse proxy on Redis', () => {
  it('forwards method, path, query, headers and body; strips hop-by-hop headers; appends the peer to a trusted proxy’s X-Forwarded-For', async () => {
    const response = await rawRequest(`${a.url}/v1/items/created?q=1&r=two`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-custom': 'kept',
        'x-forwarded-for': '203.0.113.7',
        connection: 'keep-alive, x-client-hop',
        'x-client-hop': 'dropped',
        te: 'trailers',
      },
      body: '{"hello":"upstream"}',
    });
    expect(response.status).toBe(201);
    const seen = upstream.seen.at(-1);
    expect(seen).toMatchObject({
      method: 'POST',
      url: '/base/v1/items/created?q=1&r=two',
      body: '{"hello":"upstream"}',
    });
    expect(seen?.headers['x-custom']).toBe('kept');
    expect(seen?.headers['content-type']).toBe('application/json');
    // These gateways trust loopback peers (serve-http.test.ts covers untrusted ones).
    expect(seen?.headers['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
    expect(seen?.headers.host).toBe(`127.0.0.1:${upstream.port}`);
    expect(seen?.headers['x-client-hop']).toBeUndefined();
    expect(seen?.headers.te).toBeUndefined();
    // The response: the upstream's end-to-end headers, the gateway's rate-limit headers.
    expect(response.headers['x-upstream']).toBe('yes');
    expect(response.headers['x-upstream-hop']).toBeUndefined();
    expect(response.headers['ratelimit-limit']).toBe('4');
    expect(response.headers['ratelimit-remaining']).toBe('3');
    expect(JSON.parse(response.body)).toEqual({
      method: 'POST',
      url: '/base/v1/items/created?q=1&r=two',
      body: '{"hello":"upstream"}',
    });
  });

  it('streams responses as the upstream sends them', async () => {
    const response = await fetch(`${a.url}/stream`, { headers: from('203.0.113.20') });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    // The upstream has not finished: this chunk came through before the response ended.
    expect(new TextDecoder().decode(first.value)).toBe('first chunk;');
    upstream.release();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toBe('last chunk');
  });

  it('streams request bodies as the client sends them', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${a.url}/first-chunk`, {
        method: 'POST',
        headers: { ...from('203.0.113.21'), 'content-type': 'text/plain' },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        // The upstream answered while this request body was still open: then finish it.
        res.on('end', () => {
          req.end('rest of the body');
          resolve(body);
        });
      });
      req.write('first part;');
      req.flushHeaders();
    });
    expect(answer).toBe('got: first part;');
  });

  it('two gateway processes on one Redis share each client’s limit exactly; denied requests never reach the upstream', async () => {
    const before = upstream.seen.length;
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const gateway = i % 2 === 0 ? a : b;
      // Every request invents a new API key: none buys a fresh quota.
      const headers = { ...from('203.0.113.22'), 'x-api-key': `made-up-${i}` };
      const response = await fetch(`${gateway.url}/shared`, { headers });
      statuses.push(response.status);
      if (response.status === 429) {
        expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
        expect(response.headers.get('ratelimit-remaining')).toBe('0');
        expect(response.headers.get('cache-control')).toBe('no-store');
      }
      await response.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
    expect(upstream.seen.length - before).toBe(4);
    const metrics = await (await fetch(`${a.admin}/metrics`)).text();
    expect(metric(metrics, 'floodgate_decisions_total', { route: 'default', outcome: 'denied' })).toBe(3);
    expect(metrics).toContain(
      'floodgate_store_latency_seconds_bucket{store="redis",operation="check",le="+Inf"}',
    );
  });

  it('inspect and reset find the gateway’s keys by client address', async () => {
    const common = ['--redis', redis.url, '--limit', '4/1m', '--json'];
    const byIp = await runCli(['inspect', '--ip', '203.0.113.22', ...common]);
    expect(byIp.stderr).toBe('');
    const inspected = JSON.parse(byIp.stdout);
    expect(inspected.key).toBe('ip:203.0.113.22');
    expect(inspected.rules[0]).toMatchObject({ allowed: false, remaining: 0 });
    const redisKey = inspected.rules[0].redisKeys[0].key as string;
    expect(await rawCommand(redis.port, `EXISTS ${redisKey}`)).toBe(':1');
    const reset = await runCli(['reset', '--ip', '203.0.113.22', '--redis', redis.url, '--limit', '4/1m']);
    expect(reset.code).toBe(0);
    expect(reset.stdout).toContain('1 Redis key deleted');
    // The store forgot the key. (Gateways that denied it answer from their deny cache until the
    // retry time they announced: see the README.)
    expect(await rawCommand(redis.port, `EXISTS ${redisKey}`)).toBe(':0');
  });

  it('answers /healthz and /metrics on the admin listener only; the public port forwards them', async () => {
    const response = await fetch(`${a.admin}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', store: redis.url });
    expect(new URL(a.admin).hostname).toBe('127.0.0.1');
    for (const path of ['/healthz', '/metrics']) {
      const forwarded = await fetch(`${a.url}${path}`, { headers: from('203.0.113.23') });
      expect(forwarded.status).toBe(200);
      expect(((await forwarded.json()) as { url: string }).url).toBe(`/base${path}`);
    }
    expect((await fetch(`${a.admin}/anything`)).status).toBe(404);
    expect((await fetch(`${a.admin}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('logs at start, and /healthz tells, that an allkeys-* maxmemory-policy may evict overrides', async () => {
    await rawCommand(redis.port, 'CONFIG SET maxmemory-policy allkeys-lru');
    try {
      const gateway = await startGateway([
        '--upstream',
        `${upstream.url}/base`,
        '--redis',
        redis.url,
        '--limit',
        '4/1m',
      ]);
      started.push(gateway);
      const logged = await gateway.cli.waitForLog((line) => line.event === 'store_warning');
      expect(logged).toMatchObject({ level: 'warn', store: redis.url, code: 'maxmemory-policy' });
      const health = (await (await fetch(`${gateway.admin}/healthz`)).json()) as { warnings: string[] };
      expect(health.warnings).toEqual([logged.message]);
      expect(health.warnings[0]).toContain('Redis maxmemory-policy is allkeys-lru');
    } finally {
      await rawCommand(redis.port, 'CONFIG SET maxmemory-policy noeviction');
    }
  });
});

describe('floodgate serve: tiers, routes, costs and skip list from a YAML config', () => {
  const get = (path: string, key?: string, method = 'GET', ip = '198.51.100.1') =>
    fetch(`${tiers.url}${path}`, { method, headers: { ...from(ip), ...(key ? { 'x-api-key': key } : {}) } });

  it('gives each plan its own limit: free (no key) 2 per minute, pro 5 per minute', async () => {
    const free = [];
    for (let i = 0; i < 3; i++) free.push((await get('/hello')).status);
    // Invented keys are the free plan at the client's address: no fresh quota.
    expect((await get('/hello', 'made-up-1')).status).toBe(429);
    expect(free).toEqual([200, 200, 429]);
    const pro = [];
    for (let i = 0; i < 6; i++) {
      const response = await get('/hello', 'key-pro-1');
      if (i === 0) {
        expect(response.headers.get('ratelimit-policy')).toBe('5;w=60');
        expect(response.headers.get('x-ratelimit-remaining')).toBe('4');
      }
      pro.push(response.status);
    }
    expect(pro).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('charges a route its cost, adds a route’s own limit, and skips the skip list', async () => {
    const key = 'key-pro-1';
    // Another client of the free plan for the cost test: an unknown API key counts as none.
    const costly = await get('/expensive', 'unknown-key-a', 'POST', '198.51.100.2');
    expect(costly.status).toBe(200);
    expect(upstream.seen.at(-1)?.url).toBe('/base/expensive');
    expect(costly.headers.get('ratelimit-remaining')).toBe('0');
    expect((await get('/expensive', 'unknown-key-b', 'POST', '198.51.100.2')).status).toBe(429);
    // search: its own 1/min on top of the plan's limit.
    const search1 = await get('/search/cats', 'unknown-key-b', 'GET', '198.51.100.3');
    expect(search1.status).toBe(200);
    const search2 = await get('/search/dogs', 'unknown-key-b', 'GET', '198.51.100.3');
    expect(search2.status).toBe(429);
    // The skip list: no limit, no headers, even for a key that is over its limit.
    for (let i = 0; i < 3; i++) {
      const response = await get('/public/logo.png', key);
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-limit')).toBeNull();
    }
    const metrics = await (await fetch(`${tiers.admin}/metrics`)).text();
    expect(
      metric(metrics, 'floodgate_decisions_total', { route: 'search', plan: 'free', outcome: 'denied' }),
    ).toBe(1);
    expect(
      metric(metrics, 'floodgate_decisions_total', {
        plan: 'pro',
        rule: 'pro.pro-minute',
        outcome: 'allowed',
      }),
    ).toBe(5);
  });

  it('logs one JSON line per request, never the API key', async () => {
    await tiers.cli.waitForLog((line) => line.event === 'request' && line.path === '/search/dogs');
    const text = JSON.stringify(tiers.cli.logs);
    expect(text).not.toContain('key-pro-1');
    expect(text).not.toContain('unknown-key');
    const denied = tiers.cli.logs.find((line) => line.event === 'request' && line.status === 429);
    expect(denied).toMatchObject({ method: 'GET', allowed: false, plan: 'free', ip: '198.51.100.1' });
  });
});

describe('floodgate serve: configuration errors', () => {
  it('rejects a bad config at start with exit code 2 and a message naming the field', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(
      bad,
      'rules: [60/1m]\nroutes:\n  - { path: /a }\n  - { path: /b, limit: 10/fortnight }\n',
    );
    const clash = join(dir, 'clash.json');
    await writeFile(
      clash,
      JSON.stringify({
        routes: [
          { path: '/a', method: 'GET' },
          { path: '/a', method: ['get', 'post'] },
        ],
      }),
    );
    const results = await Promise.all([
      runCli(['serve', '--config', bad]),
      runCli(['serve', '--config', clash]),
      runCli(['serve', '--limit', '5/1m', '--algorithm', 'leaky-bucket']),
    ]);
    for (const result of results) {
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stdout).toBe('');
    }
    expect(results[0]?.stderr).toContain(`${bad}: routes[1].limit: '10/fortnight' is not a limit`);
    expect(results[1]?.stderr).toContain(`${clash}: routes[1]: GET /a is also defined by routes[0]`);
    expect(results[2]?.stderr).toContain(
      '--limit[0].algorithm: "leaky-bucket" is not one of \'fixed-window\'',
    );
  });
});

describe('floodgate serve: reload and shutdown', () => {
  it('reloads on SIGHUP without dropping connections, keeps the old config on a bad reload, drains on SIGTERM', async () => {
    const config = reloadConfig;
    const gateway = reloading;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const first = await rawRequest(`${gateway.url}/a`, { agent });
    expect(first.headers['ratelimit-limit']).toBe('2');

    // A request in flight across the reload.
    const inFlight = rawRequest(`${gateway.url}/hold/1`);
    await upstream.held();
    await writeFile(
      config,
      JSON.stringify({ upstream: `${upstream.url}/base`, rules: [{ name: 'minute', limit: '5/1m' }] }),
    );
    gateway.cli.process.kill('SIGHUP');
    await gateway.cli.waitForLog((line) => line.event === 'reloaded');
    // Same keep-alive connection, new limit; the memory store kept the count (/a and /hold/1).
    const after = await rawRequest(`${gateway.url}/a`, { agent });
    expect(after.reusedSocket).toBe(true);
    expect(after.headers['ratelimit-limit']).toBe('5');
    expect(after.headers['ratelimit-remaining']).toBe('2');

    // A broken config is refused; the running one stays.
    await writeFile(config, '{ "rules": ["5/soon"] }');
    gateway.cli.process.kill('SIGHUP');
    const failed = await gateway.cli.waitForLog((line) => line.event === 'reload_failed');
    expect(failed.error).toContain("rules[0].limit: '5/soon' is not a limit");
    expect((await rawRequest(`${gateway.url}/a`, { agent })).headers['ratelimit-limit']).toBe('5');
    agent.destroy();

    // SIGTERM: no new connections, the in-flight request finishes, then exit 0.
    gateway.cli.process.kill('SIGTERM');
    await gateway.cli.waitForLog((line) => line.event === 'shutdown_started');
    await expect(fetch(`${gateway.url}/a`)).rejects.toThrow();
    upstream.release();
    const held = await inFlight;
    expect(held.status).toBe(200);
    expect(JSON.parse(held.body).url).toBe('/base/hold/1');
    expect(await gateway.cli.exited).toBe(0);
    expect(gateway.cli.logs.at(-1)).toMatchObject({ event: 'stopped', signal: 'SIGTERM', drained: true });
  });

  it('answers 502 when the upstream is down, and follows onStoreError when Redis is gone', async () => {
    await upstream.close();
    const down = await fetch(`${a.url}/anything`, { headers: from('203.0.113.30') });
    expect(down.status).toBe(502);
    expect(((await down.json()) as { title: string }).title).toBe('Bad Gateway');

    await redis.stop();
    // Fail open (the default): the request is allowed, flagged degraded, and the upstream is still down.
    const degraded = await fetch(`${b.url}/anything`, { headers: from('203.0.113.31') });
    expect(degraded.status).toBe(502);
    const health = await fetch(`${b.admin}/healthz`);
    expect(health.status).toBe(503);
    // The reason goes to the log, never into the body.
    expect(await health.json()).toEqual({ status: 'unavailable', store: redis.url });
    await b.cli.waitForLog((line) => line.event === 'healthz_failed' && typeof line.error === 'string');
    const metrics = await (await fetch(`${b.admin}/metrics`)).text();
    expect(metric(metrics, 'floodgate_degraded_decisions_total', {})).toBeGreaterThan(0);
    expect(metric(metrics, 'floodgate_upstream_errors_total', { reason: 'unavailable' })).toBe(1);
  });
});
