/**
 * `floodgate serve` secure by default, as an attacker would try it: a real gateway process in
 * front of a real Express app (which routes without regard to case or a trailing slash, its
 * defaults). No spelling of a limited path, no invented API key buys a fresh quota; paths
 * without one spelling get 400 and never reach the upstream; `--check` refuses what start would.
 */
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, runCli, startCli } from './support/cli.js';

interface Upstream {
  url: string;
  /** Requests the login handler served. */
  logins: number;
  /** Every URL that reached the app, as it arrived. */
  seen: string[];
  server: Server;
}

async function startExpressUpstream(): Promise<Upstream> {
  const upstream = { logins: 0, seen: [] as string[] } as Upstream;
  const app = express();
  app.use((req, _res, next) => {
    upstream.seen.push(req.originalUrl);
    next();
  });
  app.post('/login', (_req, res) => {
    upstream.logins++;
    res.json({ login: true });
  });
  app.use((req, res) => {
    res.status(404).json({ url: req.originalUrl });
  });
  upstream.server = createServer(app);
  upstream.server.listen(0, '127.0.0.1');
  await once(upstream.server, 'listening');
  const address = upstream.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  upstream.url = `http://127.0.0.1:${address.port}`;
  return upstream;
}

/** Sends `target` byte for byte (no client normalizes it) and reads the status line and body. */
function rawRequest(url: string, method: string, target: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
      resolve({ status, body: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
    socket.write(
      `${method} ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      'latin1',
    );
  });
}

let dir: string;
let upstream: Upstream;
let gateway: RunningCli;
let url: string;

const CONFIG = (upstreamUrl: string) => `
upstream: ${upstreamUrl}
admin: { port: 0 }
rules: [100/1m]
routes:
  - { method: POST, path: /login, limit: 5/1m }
  - { path: /Files/*, caseSensitive: true, limit: 1/1m }
`;

beforeAll(async () => {
  [dir, upstream] = await Promise.all([mkdtemp(join(tmpdir(), 'floodgate-secure-')), startExpressUpstream()]);
  await writeFile(join(dir, 'gateway.yaml'), CONFIG(upstream.url));
  gateway = startCli(['serve', '--port', '0', '--config', join(dir, 'gateway.yaml')]);
  const listening = await gateway.waitForLog((line) => line.event === 'listening', 45_000);
  url = listening.url as string;
  // admin: { port: 0 } turns the admin listener off.
  expect(listening.admin).toBe('off');
});

afterAll(async () => {
  gateway?.kill();
  await gateway?.exited;
  upstream?.server.closeAllConnections();
  upstream?.server.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('serve: one limit for every spelling of a path', () => {
  it('regression: the login limit holds for every spelling Express serves as /login; malformed paths get 400', async () => {
    for (let i = 0; i < 5; i++) expect((await rawRequest(url, 'POST', '/login')).status).toBe(200);
    expect(upstream.logins).toBe(5);
    const spellings = [
      '/login',
      '/LOGIN',
      '/login/',
      '/Login/',
      '//login',
      '/./login',
      '/a/../login',
      '/../login',
      '/%6Cogin',
      '/%6cOGIN',
      '/login?x=1',
      '/login/.',
    ];
    for (const spelling of spellings) {
      expect((await rawRequest(url, 'POST', spelling)).status, spelling).toBe(429);
    }
    // fetch drops the fragment itself; the path is /login.
    expect((await fetch(`${url}/login#x`, { method: 'POST' })).status).toBe(429);
    // A path parameter is another path to Express too: limited by the default route, never the login handler.
    const semicolon = await rawRequest(url, 'POST', '/login;x');
    expect(semicolon.status).toBe(404);
    expect(upstream.logins).toBe(5);

    const seenBefore = upstream.seen.length;
    for (const malformed of [
      '%2Flogin',
      '/%2Flogin',
      '/a%2F..%2Flogin',
      '/login#x',
      '/lo%00gin',
      '/a\\..\\login',
      '/a%5C..%5Clogin',
      '/lo%zzgin',
      '/login%',
      '/login%6',
    ]) {
      const response = await rawRequest(url, 'POST', malformed);
      // Node's own parser refuses some of these first (400 too); ours answer with a problem body.
      expect(response.status, malformed).toBe(400);
    }
    const ours = await rawRequest(url, 'POST', '/lo%00gin');
    expect(JSON.parse(ours.body)).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'the request path cannot be normalized',
    });
    expect(upstream.seen.length).toBe(seenBefore);
    expect(upstream.logins).toBe(5);
  });

  it('forwards the normalized path (the one that was matched), with the trailing slash and query as sent', async () => {
    const response = await rawRequest(url, 'GET', '/Docs/./a/../%42%7e/?q=%2F1');
    expect(response.status).toBe(404);
    expect(JSON.parse(response.body)).toEqual({ url: '/Docs/B~/?q=%2F1' });
  });

  it('matches a caseSensitive route only in its own spelling', async () => {
    expect((await rawRequest(url, 'GET', '/Files/a')).status).toBe(404); // the app has no such file
    expect((await rawRequest(url, 'GET', '/Files/b')).status).toBe(429);
    expect((await rawRequest(url, 'GET', '//Files/./c')).status).toBe(429);
    // Other spellings are other paths to this route: the default limit applies.
    expect((await rawRequest(url, 'GET', '/files/d')).status).toBe(404);
    expect((await rawRequest(url, 'GET', '/FILES/e')).status).toBe(404);
  });
});

describe('serve --check refuses what start refuses', () => {
  it('regression: bad flags and config values exit 2 with the same one line from --check and from start, no stack trace', async () => {
    const tiers = join(dir, 'tiers.yaml');
    await writeFile(
      tiers,
      'tiers: { header: x-plan, default: free }\nplans: { free: [1/1m], pro: [9/1m] }\n',
    );
    const router = join(dir, 'router.yaml');
    await writeFile(router, 'routes:\n  - { path: "/a/*/b" }\n');
    const cases: [string[], string][] = [
      [['--trust-proxy', 'maybe'], '--trust-proxy: "maybe" is not an IP address, a CIDR'],
      [['--trust-proxy', '10.0.0.0/33'], '--trust-proxy: "10.0.0.0/33" is not an IP address, a CIDR'],
      [['--admin-port', '99999'], '--admin-port: 99999 must be an integer from 0 to 65535'],
      [['--config', tiers], `${tiers}: tiers: without keys, any client picks its plan by sending x-plan`],
      [['--config', router], `${router}: routes[0].path: Wildcard must be the last character in the route`],
    ];
    const runs = await Promise.all(
      cases.flatMap(([args]) => [
        runCli(['serve', '--check', ...args]),
        runCli(['serve', '--port', '0', '--admin-port', '0', ...args]),
      ]),
    );
    for (const [index, [args, message]] of cases.entries()) {
      const [check, start] = [runs[index * 2], runs[index * 2 + 1]];
      for (const result of [check, start]) {
        expect(result?.code, args.join(' ')).toBe(2);
        expect(result?.stdout).toBe('');
        expect(result?.stderr.trim().split('\n')).toHaveLength(1);
        expect(result?.stderr).toContain(message);
        expect(result?.stderr).not.toMatch(/\n\s+at /);
      }
      expect(check?.stderr).toBe(start?.stderr);
    }
  }, 120_000);

  it('warns about a tier whose plan any client names: trust: header', async () => {
    const trusted = join(dir, 'trusted.yaml');
    await writeFile(
      trusted,
      'tiers: { header: x-plan, default: free, trust: header }\nplans: { free: [1/1m], pro: [9/1m] }\n',
    );
    const result = await runCli(['serve', '--check', '--config', trusted]);
    expect(result.code).toBe(0);
    const warnings = result.stdout.split('\n').filter((line) => line.includes('warning'));
    expect(warnings).toEqual([
      'warning: tiers.trust: header: any client picks its own plan by sending x-plan: <plan name>; list API keys in tiers.keys unless something before the gateway sets that header',
    ]);
    expect(result.stdout).toMatch(/configuration ok\n$/);
  }, 60_000);
});

describe('serve: a reload that does not validate', () => {
  it('regression: is refused with one line in the log, no stack trace, and the running gateway stays', async () => {
    const file = join(dir, 'gateway.yaml');
    await writeFile(file, `${CONFIG(upstream.url)}trustProxy: 10.0.0.0/33\n`);
    gateway.process.kill('SIGHUP');
    const failed = await gateway.waitForLog((line) => line.event === 'reload_failed', 30_000);
    expect(failed.error).toBe(
      `${file}: trustProxy: "10.0.0.0/33" is not an IP address, a CIDR such as '10.0.0.0/8', or one of 'loopback', 'linklocal', 'uniquelocal'`,
    );
    // Still running, on the configuration it had.
    expect((await rawRequest(url, 'GET', '/a%2Fb')).status).toBe(400);
    expect(gateway.logs.some((line) => line.event === 'reloaded')).toBe(false);
    expect(gateway.stderr()).toBe('');
  });
});
