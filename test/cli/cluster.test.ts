/**
 * `floodgate serve --redis-cluster` and `floodgate inspect --redis-cluster` on a real Redis
 * Cluster: three masters from the shared test harness.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyHead } from '../../src/base/key-encoding.js';
import { keySlot, type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';
import { runCli, startCli } from './support/cli.js';

let cluster: RedisCluster;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicas: 0 });
});

afterAll(async () => {
  await cluster?.stop();
});

describe('floodgate on Redis Cluster', () => {
  it('serve limits every key exactly through the cluster, and inspect reads it back', async () => {
    const seeds = cluster.rootNodes.map((node) => `${node.host}:${node.port}`).join(',');
    const gateway = startCli([
      'serve',
      '--port',
      '0',
      '--admin-port',
      '0',
      '--redis-cluster',
      seeds,
      '--limit',
      '3/1m',
      '--trust-proxy',
      'loopback',
    ]);
    try {
      const listening = await gateway.waitForLog((line) => line.event === 'listening', 15_000);
      expect(listening.store).toBe(`cluster ${seeds}`);
      // Client addresses whose limiter keys land on different masters.
      const keys = [
        '198.51.100.1',
        '198.51.100.2',
        '198.51.100.3',
        '198.51.100.4',
        '198.51.100.5',
        '198.51.100.6',
      ];
      const owners = await Promise.all(
        keys.map((key) => cluster.masterOf(keySlot(keyHead('floodgate', `ip:${key}`)))),
      );
      expect(new Set(owners).size).toBeGreaterThan(1);
      for (const key of keys) {
        const statuses = [];
        for (let i = 0; i < 4; i++) {
          const response = await fetch(`${listening.url}/hello`, { headers: { 'x-forwarded-for': key } });
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
    // A gateway and a CLI process on a three-node cluster: generous on a shared machine.
  }, 60_000);
});
