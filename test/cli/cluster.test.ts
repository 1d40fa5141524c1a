/**
 * `floodgate serve --redis-cluster` and `floodgate inspect --redis-cluster` on a real Redis
 * Cluster: three masters started from redis-server and joined with redis-cli.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RedisServer, startRedisServer } from '../support/redis-server.js';
import { runCli, startCli } from './support/cli.js';

const run = promisify(execFile);
let dir: string;
let masters: RedisServer[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floodgate-cluster-'));
  masters = await Promise.all(
    [0, 1, 2].map(async () => {
      const port = await freePort();
      return startRedisServer({
        port,
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`)],
      });
    }),
  );
  await run('redis-cli', [
    '--cluster',
    'create',
    ...masters.map((master) => `127.0.0.1:${master.port}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  for (const master of masters) {
    for (let i = 0; i < 100; i++) {
      const info = await clusterInfo(master.port);
      if (info.includes('cluster_state:ok')) break;
      await sleep(50);
    }
  }
});

afterAll(async () => {
  await Promise.all(masters.map((master) => master.stop()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** CLUSTER INFO's bulk reply (rawCommand returns only the first line). */
async function clusterInfo(port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
  return stdout;
}

describe('floodgate on Redis Cluster', () => {
  it('serve limits every key exactly through the cluster, and inspect reads it back', async () => {
    const seeds = masters.map((master) => `127.0.0.1:${master.port}`).join(',');
    const gateway = startCli(['serve', '--port', '0', '--redis-cluster', seeds, '--limit', '3/1m']);
    try {
      const listening = await gateway.waitForLog((line) => line.event === 'listening', 15_000);
      expect(listening.store).toBe(`cluster ${seeds}`);
      // Keys whose hash tags land on different masters.
      for (const key of ['alpha', 'bravo', 'charlie', 'delta']) {
        const statuses = [];
        for (let i = 0; i < 4; i++) {
          const response = await fetch(`${listening.url}/hello`, { headers: { 'x-api-key': key } });
          statuses.push(response.status);
          await response.arrayBuffer();
        }
        expect(statuses, key).toEqual([200, 200, 200, 429]);
      }
    } finally {
      gateway.kill();
      await gateway.exited;
    }
    const inspected = await runCli([
      'inspect',
      'some-client',
      '--redis-cluster',
      seeds,
      '--limit',
      '3/1m',
      '--json',
    ]);
    expect(inspected.stderr).toBe('');
    expect(inspected.code).toBe(0);
    expect(JSON.parse(inspected.stdout).rules[0]).toMatchObject({ allowed: true, remaining: 2 });
  });
});
