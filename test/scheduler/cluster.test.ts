/**
 * The scheduler on a throwaway Redis Cluster through each client (ioredis, node-redis,
 * iovalkey): two schedulers share a key's queue (its keys in one hash slot, news over the
 * cluster's pub/sub), grant at most the limit in every window, and hear each other's pause; and
 * floodgate/bottleneck's limiters of one id share maxConcurrent and the reservoir there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Bottleneck from '../../src/bottleneck/index.js';
import { createScheduler, type RuleOptions, type Scheduler } from '../../src/index.js';
import { type ClusterClients, connectClients } from '../cluster/clients.js';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';

let cluster: RedisCluster;
let clients: ClusterClients;

beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 0 });
  clients = await connectClients(cluster);
}, 60_000);

afterAll(async () => {
  await clients?.close();
  await cluster?.stop();
});

const WINDOW_MS = 300;
const rules: RuleOptions = { algorithm: 'fixed-window', limit: 5, window: WINDOW_MS };

describe.each(['ioredis', 'node-redis', 'iovalkey'])('the scheduler on Redis Cluster through %s', (name) => {
  it('shares one queue: at most the limit a window, in full while work waits, and a pause heard by the other', async () => {
    const { store } = clients.stores.find((entry) => entry.name === name) as (typeof clients.stores)[number];
    const prefix = `cluster-${name}`;
    const [one, two] = [0, 1].map(() => createScheduler({ store, prefix, rules, timeout: '2s' })) as [
      Scheduler,
      Scheduler,
    ];
    // Each scheduler's first job subscribes it to the news.
    await Promise.all([one.schedule(() => 0, { key: 'warm' }), two.schedule(() => 0, { key: 'warm' })]);
    const windowOf = (scheduler: Scheduler) =>
      scheduler.schedule((grant) => Math.round((Date.now() + grant.decision.resetMs) / WINDOW_MS), {
        key: 'k',
      });
    const windows = await Promise.all(
      Array.from({ length: 12 }, (_, index) => windowOf(index % 2 ? one : two)),
    );
    const perWindow = new Map<number, number>();
    for (const window of windows) perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    const counts = [...perWindow.keys()]
      .sort((a, b) => a - b)
      .map((window) => perWindow.get(window) as number);
    // The first window may be under way when the jobs come, the last one gets what is left.
    expect(Math.max(...counts)).toBe(5);
    expect(counts.slice(1, -1).every((count) => count === 5)).toBe(true);
    expect(counts.length).toBeLessThanOrEqual(4);

    const heard: number[] = [];
    two.on('paused', (info) => heard.push(info.until));
    await two.schedule(() => 0, { key: 'p' });
    const pausedAt = Date.now();
    await one.pause('p', 400);
    await expect.poll(() => heard.length, { timeout: 250, interval: 5 }).toBe(1);
    await expect(two.schedule(() => Date.now(), { key: 'p' })).resolves.toBeGreaterThanOrEqual(
      pausedAt + 400,
    );
    await Promise.all([one.close(), two.close()]);
  });
});

describe.each(['ioredis', 'node-redis', 'iovalkey'])(
  'floodgate/bottleneck on Redis Cluster through %s',
  (name) => {
    it('limiters of one id share maxConcurrent and the reservoir', async () => {
      const client = { ioredis: clients.ioredis, 'node-redis': clients.nodeRedis, iovalkey: clients.valkey }[
        name
      ];
      const options = { id: `bn-${name}`, client, maxConcurrent: 1, reservoir: 6 };
      const [one, two] = [new Bottleneck(options), new Bottleneck(options)];
      await Promise.all([one.ready(), two.ready()]);
      let running = 0;
      let most = 0;
      const job = async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
      };
      await Promise.all([0, 1, 2, 3].map((i) => (i % 2 ? one : two).schedule(job)));
      expect(most).toBe(1);
      expect(await one.currentReservoir()).toBe(2);
      await two.incrementReservoir(3);
      expect(await one.currentReservoir()).toBe(5);
      await Promise.all([one.disconnect(), two.disconnect()]);
    });
  },
);
