/**
 * `floodgate override` against a real Redis, seen by a real gateway process on the same Redis:
 * an operator's override changes one key's limit (or blocks it) without touching the others.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OverrideEntry } from '../../src/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { type RunningCli, runCli, startCli } from './support/cli.js';

let redis: RedisServer;
let dir: string;
let config: string;
let gateway: RunningCli;
let url: string;
/** API keys count as keys of their own only when the config lists them. */
const TENANTS = ['a', 'b', 'c', 'd'].map((tenant) => `tenant-${tenant}: free`).join(', ');

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedisServer(), mkdtemp(join(tmpdir(), 'floodgate-override-'))]);
  config = join(dir, 'gateway.yaml');
  await writeFile(
    config,
    `store: { redis: "${redis.url}" }\ntiers: { header: x-api-key, keys: { ${TENANTS} }, default: free }\nplans: { free: [4/1m], pro: [40/1m] }\n`,
  );
  gateway = startCli(['serve', '--port', '0', '--admin-port', '0', '--config', config]);
  url = (await gateway.waitForLog((line) => line.event === 'listening', 15_000)).url as string;
});

afterAll(async () => {
  gateway?.kill();
  await gateway?.exited;
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function statuses(apiKey: string, count: number): Promise<number[]> {
  const result: number[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${url}/hello`, { headers: { 'x-api-key': apiKey } });
    await response.arrayBuffer();
    result.push(response.status);
  }
  return result;
}

describe('floodgate override', () => {
  it('set gives one key other rules or a block, every gateway applies it, list and clear manage them', async () => {
    const [rules, block] = await Promise.all([
      runCli(['override', 'set', '--api-key', 'tenant-a', '--limit', '1/1m', '--config', config]),
      runCli(['override', 'set', '--api-key', 'tenant-b', '--block', '--ttl', '10m', '--config', config]),
    ]);
    expect(rules.stderr).toBe('');
    expect(rules.code).toBe(0);
    expect(rules.stdout).toMatch(/^override of "key:[\w-]{43}" set: sliding-window 1\/1m, until cleared\n$/);
    expect(rules.stdout).not.toContain('tenant-a');
    expect(block.stdout).toMatch(/set: blocked, for 10m\n$/);

    // The gateway on the same Redis applies them from the next check; other keys keep the plan's 4.
    expect(await statuses('tenant-a', 2)).toEqual([200, 429]);
    expect(await statuses('tenant-b', 1)).toEqual([429]);
    expect(await statuses('tenant-c', 5)).toEqual([200, 200, 200, 200, 429]);

    // A plan override moves one key to another plan: tenant-d is listed as free (4/min).
    const moved = await runCli([
      'override',
      'set',
      '--api-key',
      'tenant-d',
      '--plan',
      'pro',
      '--config',
      config,
    ]);
    expect(moved.stdout).toMatch(/set: plan pro, until cleared\n$/);
    expect(await statuses('tenant-d', 5)).toEqual([200, 200, 200, 200, 200]);

    // inspect shows the override, and its peek already applies it.
    const inspected = await runCli([
      'inspect',
      '--api-key',
      'tenant-b',
      '--config',
      config,
      '--plan',
      'free',
      '--json',
    ]);
    const report = JSON.parse(inspected.stdout);
    expect(report.override.override).toEqual({ block: true });
    expect(report.override.expiresInMs).toBeLessThanOrEqual(600_000);
    expect(report.rules[0]).toMatchObject({ allowed: false, remaining: 0 });

    const listed = await runCli(['override', 'list', '--json', '--config', config]);
    expect(listed.code).toBe(0);
    const entries = JSON.parse(listed.stdout) as OverrideEntry[];
    expect(entries).toHaveLength(3);
    const blocked = entries.find((entry) => entry.override !== undefined && 'block' in entry.override);
    expect(blocked?.expiresInMs).toBeGreaterThan(0);
    expect(blocked?.expiresInMs).toBeLessThanOrEqual(600_000);
    expect(
      entries.find((entry) => entry.override !== undefined && 'rules' in entry.override)?.override,
    ).toEqual({
      rules: [{ name: 'sliding-window-1-per-1m', algorithm: 'sliding-window', limit: 1, window: 60_000 }],
    });

    const cleared = await runCli(['override', 'clear', '--api-key', 'tenant-a', '--config', config]);
    expect(cleared.code).toBe(0);
    const after = await runCli(['override', 'list', '--config', config]);
    expect(after.stdout).toMatch(/^key\s+override\s+expires in\n/);
    expect(after.stdout.trim().split('\n')).toHaveLength(4);
    expect(after.stdout).toContain('blocked');
    // Eight CLI processes, one after another: generous on a shared, loaded machine.
  }, 60_000);

  it('refuses unknown plans and incomplete commands with exit code 2', async () => {
    const [unknownPlan, nothing, noAction] = await Promise.all([
      runCli(['override', 'set', 'someone', '--plan', 'gold', '--config', config]),
      runCli(['override', 'set', 'someone', '--config', config]),
      runCli(['override', '--config', config]),
    ]);
    expect(unknownPlan.code).toBe(2);
    expect(unknownPlan.stderr).toContain('override: unknown plan "gold"; the plans are free, pro');
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('set: give exactly one of --limit RATE, --block or --plan NAME');
    expect(noAction.code).toBe(2);
    expect(noAction.stderr).toContain('give one of set, clear, list');
  });
});
