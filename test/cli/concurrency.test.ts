/**
 * Concurrency limits across real processes: four `floodgate serve` gateways on one real Redis in
 * front of an upstream that records, per client, the most requests it ever had in flight at
 * once. Never above the limit, and the limit is reached; a gateway killed with SIGKILL while
 * holding slots leaves them taken until their lease runs out on the Redis clock, and no longer.
 */
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { redisTimeMs } from '../support/redis-time.js';
import { type RunningCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

const GATEWAYS = 4;
const PER_GATEWAY = 50;
const LIMIT = 5;
const HOLD_LEASE_MS = 3000;

interface Gateway {
  cli: RunningCli;
  url: string;
  admin: string;
}

/** The upstream: per client (X-Forwarded-For), requests in flight now and the most ever seen. */
interface Recorder {
  url: string;
  inFlight: Map<string, number>;
  most: Map<string, number>;
  /** Answers every request held on /hold. */
  release(): void;
  close(): Promise<void>;
}

async function startRecorder(answerAfterMs: number): Promise<Recorder> {
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  let waiting: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    const client = String(req.headers['x-forwarded-for']).split(',')[0]?.trim() ?? '';
    const now = (inFlight.get(client) ?? 0) + 1;
    inFlight.set(client, now);
    most.set(client, Math.max(most.get(client) ?? 0, now));
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      inFlight.set(client, (inFlight.get(client) ?? 1) - 1);
    };
    res.once('close', finish);
    const answer = () => res.end('ok');
    if (req.url?.startsWith('/hold')) waiting.push(answer);
    else setTimeout(answer, answerAfterMs);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    inFlight,
    most,
    release() {
      for (const answer of waiting) answer();
      waiting = [];
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function get(url: string, client: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { 'x-forwarded-for': client }, agent: false });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

let redis: RedisServer;
let client: Redis;
let upstream: Recorder;
let dir: string;
const gateways: Gateway[] = [];

beforeAll(async () => {
  redis = await startRedisServer();
  client = new Redis(redis.port, '127.0.0.1');
  // Long enough that the first requests of every gateway overlap whatever the machine's load.
  upstream = await startRecorder(1500);
  dir = await mkdtemp(join(tmpdir(), 'floodgate-concurrency-'));
  const config = join(dir, 'gateway.json');
  await writeFile(
    config,
    JSON.stringify({
      trustProxy: true,
      // A loaded machine must not turn a slow answer into a fail-open decision (which takes no slot).
      store: { timeout: '10s' },
      onStoreError: 'closed',
      rules: ['100000/1m'],
      routes: [
        { name: 'hold', path: '/hold', inherit: false, concurrency: { limit: LIMIT, lease: HOLD_LEASE_MS } },
        // A cost above the slot limit: with counts: requests each request still holds one slot.
        {
          name: 'costly',
          path: '/hold-costly',
          inherit: false,
          cost: 3,
          concurrency: { limit: 2, counts: 'requests' },
        },
        // Watched, not enforced: a request past the slot limit passes and holds no slot.
        { name: 'watched', path: '/hold-watched', inherit: false, shadow: true, concurrency: { limit: 1 } },
      ],
    }),
  );
  const args = ['--config', config, '--concurrency', String(LIMIT), '--upstream', upstream.url];
  const redisArgs = ['--redis', `redis://127.0.0.1:${redis.port}`];
  const starting = Array.from({ length: GATEWAYS }, async () => {
    const adminPort = String(await freePort());
    const cli = startCli(['serve', '--port', '0', '--admin-port', adminPort, ...args, ...redisArgs]);
    const listening = await cli.waitForLog((line) => line.event === 'listening', 60_000);
    gateways.push({ cli, url: listening.url as string, admin: listening.admin as string });
  });
  await Promise.all(starting);
}, 90_000);

afterAll(async () => {
  for (const gateway of gateways) gateway.cli.kill();
  upstream?.release();
  await upstream?.close();
  client?.disconnect();
  await redis?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

it('4 gateways x 50 concurrent requests: never more than the limit in flight per client, and the limit is reached', async () => {
  const clients = ['10.0.0.1', '10.0.0.2'];
  const replies = await Promise.all(
    gateways.flatMap((gateway) =>
      Array.from({ length: PER_GATEWAY }, (_, i) =>
        get(`${gateway.url}/work`, clients[i % clients.length] as string).then((reply) => ({
          ...reply,
          client: clients[i % clients.length] as string,
        })),
      ),
    ),
  );
  for (const who of clients) {
    expect(upstream.most.get(who), who).toBe(LIMIT);
    const mine = replies.filter((reply) => reply.client === who);
    const passed = mine.filter((reply) => reply.status === 200).length;
    expect(passed, who).toBeGreaterThanOrEqual(LIMIT);
    expect(mine.filter((reply) => reply.status === 429).length, who).toBe(mine.length - passed);
  }
  const denied = replies.find((reply) => reply.status === 429);
  expect(JSON.parse(denied?.body ?? '{}')).toMatchObject({ 'violated-policies': ['concurrency'] });
  expect(JSON.parse(denied?.body ?? '{}').detail).toMatch(
    /^Too many requests in flight for policy 'concurrency' \(at most 5 at once\)/,
  );
  // Every slot is released as its response closes, by the gateway that held it: a new request
  // passes as soon as those releases reach Redis (another process: the response can arrive
  // first), within 2 s, where a slot left to its lease would be taken for 60 s.
  for (const who of clients) expect(await statusOnceReleased(`${gateways[0]?.url}/work`, who)).toBe(200);
}, 60_000);

/** A request's status, asked again while 429 for up to 2 s (the releases of other gateways landing). */
async function statusOnceReleased(url: string, who: string): Promise<number> {
  const until = Date.now() + 2_000;
  for (;;) {
    const { status } = await get(url, who);
    if (status !== 429 || Date.now() >= until) return status;
    await sleep(20);
  }
}

it('SIGKILL of a gateway holding slots: they are free again once their lease runs out, not before', async () => {
  const [victim, survivor] = gateways as [Gateway, Gateway];
  const who = '10.0.0.9';
  const held = Array.from({ length: LIMIT }, () => get(`${victim.url}/hold`, who).catch(() => undefined));
  while ((upstream.inFlight.get(who) ?? 0) < LIMIT) await sleep(10);
  const metrics = await (await fetch(`${victim.admin}/metrics`)).text();
  expect(metrics).toContain(`floodgate_concurrency_slots_in_use{rule="hold.concurrency"} ${LIMIT}`);

  victim.cli.kill();
  await victim.cli.exited;
  await Promise.all(held);
  // The slots are still taken: nobody gave them back.
  const denied = await get(`${survivor.url}/hold`, who);
  expect(denied.status).toBe(429);
  expect(JSON.parse(denied.body)['violated-policies']).toEqual(['hold.concurrency']);

  // Each slot expires one lease after it was taken, on the Redis clock.
  const [setKey] = await client.keys('*:hold.concurrency:cc');
  const scores = (await client.zrange(setKey as string, 0, -1, 'WITHSCORES'))
    .filter((_, i) => i % 2 === 1)
    .map(Number);
  expect(scores).toHaveLength(LIMIT);
  const now = await redisTimeMs(client);
  const latest = Math.max(...scores);
  expect(latest).toBeGreaterThan(now);
  expect(latest).toBeLessThanOrEqual(now + HOLD_LEASE_MS);

  while ((await redisTimeMs(client)) <= latest)
    await sleep(Math.max(1, latest - (await redisTimeMs(client))));
  const after = Array.from({ length: LIMIT }, () => get(`${survivor.url}/hold`, who));
  while ((upstream.inFlight.get(who) ?? 0) < LIMIT) await sleep(10);
  upstream.release();
  expect((await Promise.all(after)).map((reply) => reply.status)).toEqual(Array(LIMIT).fill(200));
}, 60_000);

it('a route of cost 3 with concurrency counting requests: each request holds one slot, and the gauge says so', async () => {
  const gateway = gateways[1] as Gateway;
  const who = '10.0.0.7';
  const held = Array.from({ length: 2 }, () => get(`${gateway.url}/hold-costly`, who));
  while ((upstream.inFlight.get(who) ?? 0) < 2) await sleep(10);
  const metrics = await (await fetch(`${gateway.admin}/metrics`)).text();
  expect(metrics).toContain('floodgate_concurrency_slots_in_use{rule="costly.concurrency"} 2');
  const denied = await get(`${gateway.url}/hold-costly`, who);
  expect(denied.status).toBe(429);
  expect(JSON.parse(denied.body)).toMatchObject({ 'violated-policies': ['costly.concurrency'] });
  upstream.release();
  expect((await Promise.all(held)).map((reply) => reply.status)).toEqual([200, 200]);
}, 60_000);

it('a shadow route with concurrency: a request past its slots passes, holds none, and the gauge counts only those held', async () => {
  const gateway = gateways[2] as Gateway;
  const who = '10.0.0.5';
  const held = Array.from({ length: 2 }, () => get(`${gateway.url}/hold-watched`, who));
  while ((upstream.inFlight.get(who) ?? 0) < 2) await sleep(10);
  const metrics = await (await fetch(`${gateway.admin}/metrics`)).text();
  expect(metrics).toContain('floodgate_concurrency_slots_in_use{rule="watched.concurrency"} 1');
  expect(metrics).toMatch(/floodgate_shadow_denied_total\{[^}]*rule="watched.concurrency"[^}]*\} 1/);
  upstream.release();
  expect((await Promise.all(held)).map((reply) => reply.status)).toEqual([200, 200]);
}, 60_000);
