/**
 * A config rule with `quotaLease`, end to end: two `floodgate serve` processes on one real Redis
 * share a hot key's fixed-window limit. Under concurrent load each takes quota slices (their
 * Redis calls show in /metrics), and together they admit exactly the limit: never more, and
 * nothing lost once idle slices have gone back.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { withinOneWindow } from '../support/redis-time.js';
import { type RunningCli, runCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

const LIMIT = 300;
const WINDOW_MS = 3_600_000;
/** Requests in flight per gateway, each worker sending its next once the last is answered. */
const WORKERS = 4;
/** Requests per gateway under load: together more than the limit. */
const PER_GATEWAY = 250;

let redis: RedisServer;
let client: Redis;
let dir: string;
let config: string;
/** The client address (key) the first test filled. */
let filled: string;
const gateways: { cli: RunningCli; url: string; admin: string }[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: 2 * WORKERS });

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedisServer(), mkdtemp(join(tmpdir(), 'floodgate-lease-'))]);
  client = new Redis(redis.port, '127.0.0.1');
  config = join(dir, 'gateway.yaml');
  await writeFile(
    config,
    `trustProxy: loopback
# A loaded machine must not turn a slow take into a fail-open decision or a lost slice.
store: { timeout: 10s }
onStoreError: closed
routes:
  - name: feed
    path: /hello # the demo API's (no upstream)
    inherit: false
    rules: [{ name: feed, algorithm: fixed-window, limit: ${LIMIT}, window: 1h, quotaLease: { max: 50 } }]
`,
  );
  const starting = [0, 1].map(async () => {
    const adminPort = String(await freePort());
    const args = ['--config', config, '--redis', redis.url];
    const cli = startCli(['serve', '--port', '0', '--admin-port', adminPort, ...args]);
    const listening = await cli.waitForLog((line) => line.event === 'listening', 60_000);
    gateways.push({ cli, url: listening.url as string, admin: listening.admin as string });
  });
  await Promise.all(starting);
}, 90_000);

afterAll(async () => {
  for (const gateway of gateways) gateway.cli.kill();
  await Promise.all(gateways.map((gateway) => gateway.cli.exited));
  agent.destroy();
  client?.disconnect();
  await redis?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

function status(url: string, ip: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { 'x-forwarded-for': ip }, agent });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `count` requests to `url`, WORKERS at a time; resolves with how many were admitted. */
async function load(url: string, ip: string, count: number): Promise<number> {
  let sent = 0;
  let admitted = 0;
  const worker = async () => {
    while (sent < count) {
      sent++;
      if ((await status(url, ip)) === 200) admitted++;
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
  return admitted;
}

/** Quota slices a gateway has taken: its store calls of operation `lease`. */
async function slicesTaken(admin: string): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('floodgate_store_latency_seconds_count{store="redis",operation="lease"}'));
  return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? 0);
}

it('two gateways lease a hot key under concurrent load and admit exactly the limit together', async () => {
  const { underLoad, total } = await withinOneWindow(client, WINDOW_MS, async (attempt) => {
    // A fresh client address (key) per attempt: an attempt across a window's end starts over.
    const ip = `203.0.113.${attempt + 1}`;
    const loads = gateways.map((gateway) => load(`${gateway.url}/hello`, ip, PER_GATEWAY));
    const underLoad = (await Promise.all(loads)).reduce((sum, admitted) => sum + admitted, 0);
    // What the load left in slices goes back once the key is idle (100 ms) in each gateway; then
    // one request at a time to each until a round after such a pause admits nothing.
    let total = underLoad;
    for (;;) {
      await sleep(1000);
      let admitted = 0;
      for (const gateway of gateways) {
        while ((await status(`${gateway.url}/hello`, ip)) === 200) admitted++;
      }
      if (admitted === 0) break;
      total += admitted;
    }
    filled = ip;
    return { underLoad, total };
  });
  expect(underLoad).toBeLessThanOrEqual(LIMIT);
  expect(total).toBe(LIMIT);
  for (const gateway of gateways) expect(await slicesTaken(gateway.admin)).toBeGreaterThan(0);
}, 60_000);

it('serve --check and inspect show the rule as leased; inspect sees the key full', async () => {
  const check = await runCli(['serve', '--check', '--config', config]);
  expect(check.code).toBe(0);
  expect(check.stdout).toContain(`route feed: * /hello -> feed: fixed-window ${LIMIT}/1h quotaLease max 50`);
  const inspect = await runCli([
    'inspect',
    '--ip',
    filled,
    '--config',
    config,
    '--redis',
    redis.url,
    '--json',
  ]);
  expect(inspect.code).toBe(0);
  const { rules } = JSON.parse(inspect.stdout) as { rules: Record<string, unknown>[] };
  expect(rules.find((rule) => rule.rule === 'feed')).toMatchObject({
    rule: 'feed',
    quotaLease: { max: 50 },
    allowed: false,
    remaining: 0,
  });
}, 60_000);

describe('a gateway gives its slices back when a generation is retired', () => {
  /** High enough that nothing is denied: the count in Redis is then exactly what was admitted. */
  const HIGH = 100_000;

  /** A config whose one rule leases; `redis` in the file, so a reload can point elsewhere. */
  async function leasedConfig(name: string, redisUrl: string): Promise<string> {
    const file = join(dir, name);
    await writeFile(
      file,
      `trustProxy: loopback
store: { redis: '${redisUrl}', timeout: 10s }
onStoreError: closed
routes:
  - name: feed
    path: /hello
    inherit: false
    rules: [{ name: feed, algorithm: fixed-window, limit: ${HIGH}, window: 1h, quotaLease: { max: 50 } }]
`,
    );
    return file;
  }

  async function startGateway(file: string) {
    const admin = String(await freePort());
    const cli = startCli(['serve', '--port', '0', '--admin-port', admin, '--config', file]);
    const listening = await cli.waitForLog((line) => line.event === 'listening', 60_000);
    return { cli, url: `${listening.url as string}/hello`, admin: listening.admin as string };
  }

  /** Requests WORKERS at a time until stopped or one fails (the gateway stopped accepting). */
  function steadyLoad(url: string, ip: string) {
    let admitted = 0;
    let stopped = false;
    const worker = async () => {
      while (!stopped) {
        // A refused or reset request was never checked: only answered ones count.
        const answered = await status(url, ip).catch(() => undefined);
        if (answered === undefined) return;
        if (answered === 200) admitted++;
      }
    };
    const done = Promise.all(Array.from({ length: WORKERS }, worker)).then(() => admitted);
    return {
      stop: () => {
        stopped = true;
        return done;
      },
      done,
    };
  }

  /** Resolves once the gateway has taken a slice: the key is hot and a slice is held. */
  async function sliceTaken(admin: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    while ((await slicesTaken(admin)) === 0) {
      if (Date.now() > deadline) throw new Error('no quota slice taken within 30 s');
      await sleep(50);
    }
  }

  /** Units Redis has left for `ip`: inspect peeks, and shows what would be left after one more request. */
  async function unitsLeft(file: string, ip: string): Promise<number> {
    const inspect = await runCli(['inspect', '--ip', ip, '--config', file, '--json']);
    expect(inspect.code).toBe(0);
    const { rules } = JSON.parse(inspect.stdout) as { rules: { rule: string; remaining: number }[] };
    return (rules.find((rule) => rule.rule === 'feed')?.remaining ?? Number.NaN) + 1;
  }

  it('on SIGTERM, after the requests under way: Redis holds exactly what was admitted', async () => {
    const file = await leasedConfig('stop.yaml', redis.url);
    await withinOneWindow(client, WINDOW_MS, async (attempt) => {
      const ip = `198.51.100.${attempt + 1}`;
      const gateway = await startGateway(file);
      try {
        // Stopped under load: its last slice is still held (not idle) when it closes.
        const load = steadyLoad(gateway.url, ip);
        await sliceTaken(gateway.admin);
        gateway.cli.process.kill('SIGTERM');
        const admitted = await load.done;
        expect(await gateway.cli.exited).toBe(0);
        expect(gateway.cli.logs.at(-1)).toMatchObject({ event: 'stopped', drained: true });
        expect(admitted).toBeGreaterThan(0);
        expect(await unitsLeft(file, ip)).toBe(HIGH - admitted);
      } finally {
        gateway.cli.kill();
      }
    });
  }, 120_000);

  it('on SIGHUP, once the retired generation has drained, before its Redis connection closes', async () => {
    // The same server under another URL: the reload opens a new connection and closes the old one.
    const file = await leasedConfig('reload.yaml', redis.url);
    await withinOneWindow(client, WINDOW_MS, async (attempt) => {
      const ip = `198.51.100.${attempt + 101}`;
      const gateway = await startGateway(file);
      try {
        const load = steadyLoad(gateway.url, ip);
        await sliceTaken(gateway.admin);
        await leasedConfig('reload.yaml', `${redis.url}/0`);
        gateway.cli.process.kill('SIGHUP');
        await gateway.cli.waitForLog((line) => line.event === 'reloaded', 60_000);
        const admitted = await load.stop();
        expect(admitted).toBeGreaterThan(0);
        // The new generation's slices go back once the key is idle (100 ms); the old one's at its close.
        const deadline = Date.now() + 30_000;
        let left = await unitsLeft(file, ip);
        while (left !== HIGH - admitted && Date.now() < deadline) {
          await sleep(200);
          left = await unitsLeft(file, ip);
        }
        expect(left).toBe(HIGH - admitted);
      } finally {
        gateway.cli.kill();
      }
    });
  }, 120_000);
});
