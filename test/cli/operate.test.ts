/**
 * `floodgate inspect` and `floodgate reset` as real processes against a real Redis, with the
 * same config file a gateway would use. State is written by a limiter in this process, as a
 * gateway would write it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, redisStore } from '../../src/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';
import { runCli } from './support/cli.js';

let redis: RedisServer;
let client: Redis;
let dir: string;
let config: string;

const CONFIG = `
tiers: { header: x-plan, default: free, trust: header }
plans:
  free: [{ name: free-minute, limit: 3/1m, algorithm: sliding-log }]
  pro: [{ name: pro-minute, limit: 10/1m, algorithm: fixed-window, counts: requests }]
routes:
  - { name: upload, method: POST, path: /upload, limit: 2/1h, algorithm: token-bucket }
`;

interface Inspected {
  key: string;
  rules: {
    rule: string;
    counts: 'requests' | 'cost';
    allowed: boolean;
    remaining: number;
    retryAfterMs: number | null;
    plans: string[];
    routes: string[];
    redisKeys: { key: string; exists: boolean; ttlMs: number | null }[];
  }[];
}

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedisServer(), mkdtemp(join(tmpdir(), 'floodgate-operate-'))]);
  client = new Redis(redis.port, '127.0.0.1');
  config = join(dir, 'gateway.yaml');
  await writeFile(config, CONFIG);
});

afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The free plan's limiter, as the gateway builds it (same rule, same default prefix). */
function freePlan() {
  return createLimiter({
    store: redisStore({ client }),
    timeout: SLOW_MACHINE_TIMEOUT,
    rules: [{ name: 'free-minute', limit: 3, window: '1m', algorithm: 'sliding-log' }],
  });
}

// Each test starts up to four `floodgate` processes (~0.5 s of CPU each for Node, tsx and the
// CLI's modules): bounded work, but a loaded 2-core machine stretches it past the default 20 s.
describe('floodgate inspect and reset', { timeout: 60_000 }, () => {
  it('inspect peeks under every rule of the config and lists the Redis keys with their TTLs', async () => {
    const limiter = freePlan();
    await limiter.check('client-1');
    await limiter.check('client-1');

    const result = await runCli(['inspect', 'client-1', '--config', config, '--redis', redis.url, '--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const inspected = JSON.parse(result.stdout) as Inspected;
    expect(inspected.key).toBe('client-1');
    expect((inspected as unknown as { override: unknown }).override).toBeNull();
    expect(inspected.rules.map((rule) => rule.rule)).toEqual([
      'free-minute',
      'pro-minute',
      'upload.token-bucket-2-per-1h',
    ]);
    const [free, pro, upload] = inspected.rules;
    // 2 of 3 used: one more fits, and leaves 0.
    expect(free).toMatchObject({ allowed: true, remaining: 0, retryAfterMs: 0, plans: ['free'], routes: [] });
    expect(free?.redisKeys.map((key) => key.key)).toEqual([
      'floodgate:{client-1}:free-minute:sl',
      'floodgate:{client-1}:free-minute:sl:n',
    ]);
    for (const key of free?.redisKeys ?? []) {
      expect(key.exists).toBe(true);
      expect(key.ttlMs).toBeGreaterThan(0);
      expect(key.ttlMs).toBeLessThanOrEqual(60_000);
    }
    expect(pro).toMatchObject({
      allowed: true,
      remaining: 9,
      plans: ['pro'],
      redisKeys: [{ exists: false, ttlMs: null }],
    });
    expect(upload).toMatchObject({ plans: ['free', 'pro'], routes: ['upload'], remaining: 1 });
    expect(inspected.rules.map((rule) => rule.counts)).toEqual(['cost', 'requests', 'cost']);

    // A cost of 5: the request rule would take 1 of its 10; the 2/1h token bucket can never take 5.
    const costly = await runCli([
      'inspect',
      'client-1',
      '--config',
      config,
      '--redis',
      redis.url,
      '--plan',
      'pro',
      '--cost',
      '5',
      '--json',
    ]);
    expect(costly.code).toBe(0);
    const [proCostly, uploadCostly] = (JSON.parse(costly.stdout) as Inspected).rules;
    expect(proCostly).toMatchObject({ rule: 'pro-minute', allowed: true, remaining: 9 });
    expect(uploadCostly).toMatchObject({ allowed: false, remaining: 2, retryAfterMs: null });

    // Inspect consumed nothing: the third request still passes.
    expect((await limiter.check('client-1')).allowed).toBe(true);
    const full = await runCli(['inspect', 'client-1', '--config', config, '--plan', 'free', '--cost', '1'], {
      REDIS_URL: redis.url,
    });
    expect(full.code).toBe(0);
    expect(full.stdout).toContain(`key "client-1" on ${redis.url} (prefix floodgate), asking about cost 1`);
    expect(full.stdout).toMatch(
      /free-minute\s+sliding-log\s+3\/1m\s+plan free; all routes\s+denied\s+0\s+\d+s\s+\d+s/,
    );
    expect(full.stdout).not.toContain('pro-minute');
    expect(full.stdout).toContain('Override: none');
    expect(full.stdout).toMatch(/floodgate:\{client-1\}:free-minute:sl {2}TTL \d+s/);
  });

  it('reset forgets the key under every rule, and the next request has the full quota', async () => {
    const limiter = freePlan();
    await limiter.check('client-2');
    const result = await runCli(['reset', 'client-2', '--config', config, '--redis', redis.url]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      'reset "client-2" under 3 rules (free-minute, pro-minute, upload.token-bucket-2-per-1h): 2 Redis keys deleted\n',
    );
    expect(
      await client.exists('floodgate:{client-2}:free-minute:sl', 'floodgate:{client-2}:free-minute:sl:n'),
    ).toBe(0);
    expect((await limiter.check('client-2')).remaining).toBe(2);
  });

  it('inspect shows a block and how long it lasts; reset lifts it', async () => {
    const blockConfig = join(dir, 'block.yaml');
    // A token bucket's key lives a minute past the last check; a fixed window's ends with its
    // clock-aligned window, which a slow run can cross before reset counts the keys.
    await writeFile(
      blockConfig,
      'rules: [{ name: login, limit: 1/1m, algorithm: token-bucket, block: 15m }]\n',
    );
    const limiter = createLimiter({
      store: redisStore({ client }),
      timeout: SLOW_MACHINE_TIMEOUT,
      rules: { name: 'login', limit: 1, window: '1m', algorithm: 'token-bucket', block: '15m' },
    });
    await limiter.check('client-3');
    expect((await limiter.check('client-3')).retryAfterMs).toBe(15 * 60_000);
    const result = await runCli([
      'inspect',
      'client-3',
      '--config',
      blockConfig,
      '--redis',
      redis.url,
      '--json',
    ]);
    expect(result.code).toBe(0);
    const [row] = (JSON.parse(result.stdout) as { rules: { allowed: boolean; blockedForMs: number }[] })
      .rules;
    expect(row?.allowed).toBe(false);
    // Counted down by Redis's clock since the block began: a little under 15 minutes.
    expect(row?.blockedForMs).toBeGreaterThan(14 * 60_000);
    expect(row?.blockedForMs).toBeLessThanOrEqual(15 * 60_000);
    // The table lists the rule as serve --check does, its block included.
    const table = await runCli(['inspect', 'client-3', '--config', blockConfig, '--redis', redis.url]);
    expect(table.stdout).toMatch(/login\s+token-bucket\s+1\/1m block 15m\s+all routes\s+denied\s/);
    const reset = await runCli(['reset', 'client-3', '--config', blockConfig, '--redis', redis.url]);
    expect(reset.stdout).toBe('reset "client-3" under 1 rule (login): 2 Redis keys deleted\n');
    expect(await client.exists('floodgate:{client-3}:login:tb:block')).toBe(0);
    await limiter.reset('client-3'); // this process's deny cache too
    expect((await limiter.check('client-3')).allowed).toBe(true);
  });

  it('exits 2 without a store or a key, or with an unknown plan; 1 when Redis is unreachable', async () => {
    const [noStore, noKey, badPlan, unreachable] = await Promise.all([
      runCli(['inspect', 'client-1', '--limit', '5/1m']),
      runCli(['reset', '--redis', redis.url]),
      runCli(['inspect', 'client-1', '--config', config, '--redis', redis.url, '--plan', 'gold']),
      runCli(['reset', 'client-1', '--redis', 'redis://127.0.0.1:1']),
    ]);
    expect(noStore.code).toBe(2);
    expect(noStore.stderr).toContain(
      'inspect needs the shared store: give --redis URL, --redis-cluster NODES or REDIS_URL',
    );
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('give the KEY to reset');
    expect(badPlan.code).toBe(2);
    expect(badPlan.stderr).toContain("--plan: 'gold' is not one of free, pro");
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('cannot connect to Redis (redis://127.0.0.1:1)');
    for (const result of [noStore, noKey, badPlan, unreachable]) {
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});
