/**
 * `floodgate serve` routes that count by the upstream's answer, end to end (a real upstream, the
 * gateway as a real process): `count: failed` gives successful responses back, and
 * `settle: { header }` charges the actual cost from an upstream header or from the trailer of a
 * chunked response. `--check` lists both.
 */
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningCli, runCli, startCli } from './support/cli.js';

let dir: string;
let config: string;
let upstream: Server;
let cli: RunningCli;
let url: string;

const CONFIG = `rules: [100000/1m]
routes:
  - { name: login, method: POST, path: /login, limit: 3/1m, inherit: false, count: failed }
  - name: chat
    method: POST
    path: /chat
    inherit: false
    cost: 10
    rules: [{ name: tokens, algorithm: token-bucket, limit: 100, window: 1h }]
    settle: { header: x-usage-tokens }
`;

beforeAll(async () => {
  // /login?status=N answers N; /chat?tokens=N reports N in a header, or with ?trailer in a trailer.
  upstream = createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    req.resume();
    if (req.url?.startsWith('/login')) {
      res.statusCode = Number(query.get('status') ?? 200);
      return void res.end('login');
    }
    const tokens = query.get('tokens') ?? '';
    if (query.has('trailer')) {
      res.writeHead(200, { trailer: 'x-usage-tokens', 'content-type': 'text/plain' });
      res.write('streamed;');
      res.addTrailers({ 'x-usage-tokens': tokens });
      return void res.end('done');
    }
    res.writeHead(200, { 'x-usage-tokens': tokens });
    res.end('answered');
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  dir = await mkdtemp(join(tmpdir(), 'floodgate-counting-'));
  config = join(dir, 'counting.yaml');
  await writeFile(config, CONFIG);
  const { port } = upstream.address() as AddressInfo;
  cli = startCli([
    'serve',
    '--port',
    '0',
    '--admin-port',
    '0',
    '--config',
    config,
    '--upstream',
    `http://127.0.0.1:${port}`,
  ]);
  const listening = await cli.waitForLog((line) => line.event === 'listening', 45_000);
  url = listening.url as string;
});

afterAll(async () => {
  cli?.kill();
  await cli?.exited;
  upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

async function post(path: string): Promise<{ status: number; remaining: number; body: string }> {
  const response = await fetch(`${url}${path}`, { method: 'POST' });
  const body = await response.text();
  return { status: response.status, remaining: Number(response.headers.get('ratelimit-remaining')), body };
}

it('count: failed lets successful logins through and denies the 4th failed one (limit 3)', async () => {
  const answers: { status: number; remaining: number }[] = [];
  for (const status of [200, 401, 200, 200, 401, 200, 401, 401]) {
    const { body: _body, ...answer } = await post(`/login?status=${status}`);
    answers.push(answer);
  }
  expect(answers.map((answer) => answer.status)).toEqual([200, 401, 200, 200, 401, 200, 401, 429]);
  // The first success's head shows its request given back: all 3 left, not the reservation's 2.
  expect(answers[0]?.remaining).toBe(3);
});

it('settle: { header } charges the upstream header, then the trailer of a chunked response', async () => {
  // The head shows the header's cost: 30 taken (10 reserved, 20 charged).
  const first = await post('/chat?tokens=30');
  expect(first).toEqual({ status: 200, remaining: 70, body: 'answered' });
  // A trailer comes after the head: it shows the 10 reserved.
  const streamed = await post('/chat?tokens=45&trailer');
  expect(streamed).toEqual({ status: 200, remaining: 60, body: 'streamed;done' });
  // 45 taken for the streamed one; this one reserves 10 (100 - 30 - 45 - 10) and uses 5.
  const next = await post('/chat?tokens=5');
  expect(next.remaining).toBe(20);
});

it('serve --check lists count and settle with the route', async () => {
  const { code, stdout } = await runCli(['serve', '--check', '--config', config]);
  expect(code).toBe(0);
  expect(stdout).toContain(
    'route login: POST /login (count failed) -> login.sliding-window-3-per-1m: sliding-window 3/1m',
  );
  expect(stdout).toContain(
    'route chat: POST /chat (cost 10, settle from header x-usage-tokens) -> tokens: token-bucket 100/1h',
  );
});
