/**
 * The fetch guard (and the Hono middleware) outside Node: their runtime module graphs import
 * nothing from Node, and the fetch guard runs in workerd, the Cloudflare Workers runtime (the
 * `workerd` package ships its binary), compiled module by module from the source.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { builtinModules, createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moduleGraph } from '../support/module-graph.js';
import { integerField, listField, retryAfter } from './support/client.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const NODE_GLOBALS = /\b(?:Buffer|process|require|__dirname|__filename|global)\b(?!\s*:)/;

describe.each(['http/fetch.ts', 'http/hono.ts'])('the runtime module graph of %s', (entry) => {
  const graph = moduleGraph(join(SRC, entry));

  it('imports nothing from node: or any other package at run time', () => {
    expect(graph.files.length).toBeGreaterThan(10);
    expect(graph.external).toEqual([]);
  });

  it('uses no Node-only global (setImmediate only where it is feature-tested)', async () => {
    for (const file of graph.files) {
      const code = ts.transpileModule(await readFile(file, 'utf8'), {
        compilerOptions: {
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.ESNext,
          removeComments: true,
        },
      }).outputText;
      const name = relative(SRC, file);
      expect(code, name).not.toMatch(NODE_GLOBALS);
      if (name !== 'turns.ts') expect(code, name).not.toMatch(/\bsetImmediate\b/);
      for (const builtin of builtinModules) expect(code, name).not.toContain(`from '${builtin}'`);
    }
  });
});

/** A free loopback port (workerd is told the port; it cannot report one it picked). */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

const WORKER = `
import { apiKeyOrAddress, createFetchGuard } from './http/fetch.js';

// Created at module scope, as a Worker would: the limiter and memory store start no timers here.
const guard = createFetchGuard({
  rules: { name: 'pair', algorithm: 'sliding-log', limit: 2, window: '1m' },
  ip: (request) => request.headers.get('cf-connecting-ip'),
  key: apiKeyOrAddress({ header: 'x-api-key', known: (key) => key.startsWith('sk_live_') }),
  apiKeySecret: 'pepper',
  headers: ['draft-6', 'legacy'],
});

export default {
  async fetch(request) {
    const limited = await guard(request);
    if (limited) return limited;
    return guard.withHeaders(request, Response.json({ remaining: guard.decisionFor(request).remaining }));
  },
};
`;

describe('the fetch guard in workerd (Cloudflare Workers runtime)', () => {
  let dir: string;
  let workerd: ChildProcess | undefined;
  let url: string;
  let log = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'floodgate-workerd-'));
    const { files } = moduleGraph(join(SRC, 'http/fetch.ts'));
    const modules = ['worker.js'];
    await writeFile(join(dir, 'worker.js'), WORKER);
    for (const file of files) {
      const name = relative(SRC, file).replace(/\.ts$/, '.js');
      const { outputText } = ts.transpileModule(await readFile(file, 'utf8'), {
        compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
      });
      await mkdir(join(dir, dirname(name)), { recursive: true });
      await writeFile(join(dir, name), outputText);
      modules.push(name);
    }
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    await writeFile(
      join(dir, 'config.capnp'),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [
${modules.map((name) => `    (name = "${name}", esModule = embed "${name}")`).join(',\n')}
  ],
  compatibilityDate = "2025-09-01",
);
`,
    );
    const binary = join(
      dirname(createRequire(import.meta.url).resolve('workerd/package.json')),
      'bin',
      'workerd',
    );
    // The package's bin is the binary itself or a launcher script with a shebang: run it directly.
    workerd = spawn(binary, ['serve', 'config.capnp'], { cwd: dir });
    workerd.stdout?.on('data', (chunk) => {
      log += chunk;
    });
    workerd.stderr?.on('data', (chunk) => {
      log += chunk;
    });
    // Ready when it answers; a start-up failure shows its log.
    for (let attempt = 0; ; attempt++) {
      const ready = await fetch(`${url}/ready`, { headers: { 'cf-connecting-ip': '192.0.2.250' } }).then(
        () => true,
        () => false,
      );
      if (ready) break;
      if (attempt > 200 || workerd.exitCode !== null) throw new Error(`workerd did not start:\n${log}`);
      await new Promise((done) => setTimeout(done, 100));
    }
  }, 60_000);

  afterAll(async () => {
    if (workerd !== undefined && workerd.exitCode === null) {
      workerd.kill('SIGTERM');
      await once(workerd, 'exit');
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const from = (ip: string, headers: Record<string, string> = {}) =>
    fetch(url, { headers: { 'cf-connecting-ip': ip, ...headers } });

  it('counts per client address: exactly limit allowed, then a 429 problem with Retry-After', async () => {
    const first = await from('203.0.113.1');
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ remaining: 1 });
    expect(listField(first, 'RateLimit-Policy')).toEqual([{ name: 2, params: { w: 60 } }]);
    expect(integerField(await from('203.0.113.1'), 'X-RateLimit-Remaining')).toBe(0);
    const denied = await from('203.0.113.1');
    expect(denied.status).toBe(429);
    expect(denied.headers.get('content-type')).toBe('application/problem+json');
    expect(denied.headers.get('cache-control')).toBe('no-store');
    const wait = retryAfter(denied);
    expect(wait).toBeGreaterThanOrEqual(59);
    expect(wait).toBeLessThanOrEqual(60);
    expect(((await denied.json()) as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'pair',
    ]);
    // IPv6 clients of one /64 share a bucket; another address is another client.
    expect((await from('2001:db8:1:2::1')).status).toBe(200);
    expect((await from('2001:db8:1:2::ffff')).status).toBe(200);
    expect((await from('2001:db8:1:2:aaaa::1')).status).toBe(429);
    expect((await from('203.0.113.2')).status).toBe(200);
  });

  it('hashes known API keys (HMAC) into buckets of their own; unknown keys count under the address', async () => {
    const withKey = (key: string) => from('198.51.100.1', { 'x-api-key': key });
    expect((await withKey('sk_live_alpha')).status).toBe(200);
    expect((await withKey('sk_live_alpha')).status).toBe(200);
    expect((await withKey('sk_live_alpha')).status).toBe(429);
    expect((await withKey('invented')).status).toBe(200);
    expect((await withKey('k'.repeat(300))).status).toBe(200);
    expect((await from('198.51.100.1')).status).toBe(429);
    expect(log).not.toMatch(/error/i);
  });
});
