/**
 * `floodgate top` as a real process reading the fleet's sketches that another real process, a
 * gateway on the same throwaway Redis, merged into it (its default interval, 5 s): the gateway's
 * denied client shows, with its count; the gateway's own `GET /top?fleet=true` shows a key
 * another process denied. Usage errors exit 2; keys with control characters are shown escaped,
 * never written raw to the terminal.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTop } from '../../src/cli/top.js';
import { createLimiter, redisStore } from '../../src/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { type RunningCli, runCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

let redis: RedisServer;
let gateway: RunningCli;
let url: string;
let admin: string;

beforeAll(async () => {
  redis = await startRedisServer();
  gateway = startCli([
    'serve',
    '--port',
    '0',
    '--admin-port',
    String(await freePort()),
    '--redis',
    redis.url,
    '--prefix',
    'fleetcli',
    '--limit',
    '3/1m',
    '--trust-proxy',
    'loopback',
  ]);
  const listening = await gateway.waitForLog((line) => line.event === 'listening', 45_000);
  url = listening.url as string;
  admin = listening.admin as string;
}, 60_000);

afterAll(async () => {
  gateway?.kill();
  await redis?.stop();
});

async function requests(ip: string, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    const response = await fetch(url, { headers: { 'x-forwarded-for': ip } });
    await response.arrayBuffer();
  }
}

describe('floodgate top', () => {
  it('prints the keys a gateway process denied most, once merged into Redis (within its 5 s)', async () => {
    await requests('198.51.100.4', 10);
    await requests('198.51.100.5', 5);
    const args = ['top', '--redis', redis.url, '--prefix', 'fleetcli', '--once'];
    let result = await runCli(args);
    for (let tries = 0; tries < 20 && !result.stdout.includes('198.51.100.4'); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      result = await runCli(args);
    }
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toBe(`top denied keys of the fleet, prefix fleetcli, on ${redis.url}`);
    expect(lines.slice(1).map((line) => line.split(/\s{2,}/))).toEqual([
      ['#', 'key', 'denials', 'bound'],
      [expect.stringMatching(/^-+$/), expect.stringMatching(/^-+$/), expect.stringMatching(/^-+$/), '-----'],
      ['1', 'ip:198.51.100.4', '7', 'exact'],
      ['2', 'ip:198.51.100.5', '2', 'exact'],
    ]);
    const checked = await runCli([...args, '--by', 'checked', '--limit', '1']);
    expect(checked.stdout).toMatch(/^1 {2}ip:198\.51\.100\.4 {2}\s*10 {2}exact$/m);
    expect(checked.stdout).not.toContain('198.51.100.5');
  }, 60_000);

  it("GET /top?fleet=true on the gateway answers the fleet's keys: one denied by another process too", async () => {
    const client = new Redis(redis.url);
    // Another process on the same Redis and prefix, merging into the fleet's sketches every 50 ms.
    const elsewhere = createLimiter({
      store: redisStore({ client }),
      prefix: 'fleetcli',
      rules: { algorithm: 'fixed-window', limit: 1, window: '1m' },
      fleetInterval: '50ms',
    });
    try {
      for (let i = 0; i < 4; i++) await elsewhere.check('ip:203.0.113.99');
      const keys = async (query: string) =>
        ((await (await fetch(`${admin}/top?${query}`)).json()) as { key: string }[]).map(
          (entry) => entry.key,
        );
      await expect
        .poll(() => keys('fleet=true&limit=10'), { timeout: 5_000, interval: 100 })
        .toContain('ip:203.0.113.99');
      expect(await keys('limit=10')).not.toContain('ip:203.0.113.99');
    } finally {
      await elsewhere.close();
      client.disconnect();
    }
  });

  it('exits 2 on usage errors, naming the flag', async () => {
    const noRedis = await runCli(['top', '--once']);
    expect([noRedis.code, noRedis.stderr]).toEqual([
      2,
      "floodgate top: needs --redis URL (or REDIS_URL): the fleet merges its heavy hitters into Redis (see 'floodgate top --help')\n",
    ]);
    const badBy = await runCli(['top', '--redis', redis.url, '--by', 'keys']);
    expect([badBy.code, badBy.stderr]).toEqual([
      2,
      "floodgate top: --by: 'keys' must be denied or checked (see 'floodgate top --help')\n",
    ]);
    const help = await runCli(['--help']);
    expect(help.stdout).toContain(
      '  top              the keys the whole fleet denies (or checks) most, live, from Redis\n',
    );
  });

  it('shows control characters in keys escaped, and says when there is nothing yet', () => {
    const view = renderTop([{ key: 'a\u001b[2Jb\n', count: 3, error: 1 }], 'checked', 'title');
    expect(view).toMatch(/a\\x1b\[2Jb\\x0a +3 {2}at least 2/);
    expect(view).not.toContain('\u001b');
    expect(renderTop([], 'denied', 'title')).toBe(
      'title\nno keys yet: limiters merge their heavy hitters every 5 s by default\n',
    );
  });
});
