/**
 * Cluster clients configured as docs/cluster.md recommends, so the tests prove the advice:
 * - ioredis / iovalkey `Cluster`: masters only; a command whose connection closed is failed, not
 *   replayed on the promoted replica (`retryDelayOnFailover: 0`: it may already have run); a
 *   per-command timeout; MOVED, ASK, TRYAGAIN and CLUSTERDOWN are retried by the client itself.
 *   (`maxRetriesPerRequest` is left alone: ioredis never reconnects a cluster node's connection,
 *   so that option never applies there.)
 * - node-redis `createCluster`: no offline queue, so checks for a dead master's slots fail at
 *   once instead of waiting for a node that may never return; and no CLIENT SETINFO handshake,
 *   which in node-redis < 5.11 can leave a node's connection falsely "ready" and every later
 *   command to it hanging when the node dies mid-reconnect (redis/node-redis#3104).
 */
import { Cluster as IoRedisCluster } from 'ioredis';
import { Cluster as ValkeyCluster } from 'iovalkey';
import { createCluster } from 'redis';
import { type RedisStoreOptions, redisStore, type Store } from '../../src/index.js';
import type { RedisCluster } from '../support/redis-cluster.js';

/** How long ioredis waits for one command's reply before failing it. */
export const IOREDIS_COMMAND_TIMEOUT_MS = 1000;

/** ioredis and iovalkey share these cluster options: fast failover for tests that cause it. */
const IOREDIS_STYLE_OPTIONS = {
  scaleReads: 'master' as const,
  retryDelayOnFailover: 0,
  clusterRetryStrategy: (times: number) => Math.min(100 * times, 1000),
  redisOptions: { commandTimeout: IOREDIS_COMMAND_TIMEOUT_MS },
};

export type NodeRedisCluster = ReturnType<typeof createCluster>;

export function ioredisCluster(cluster: RedisCluster): IoRedisCluster {
  const client = new IoRedisCluster(cluster.rootNodes, IOREDIS_STYLE_OPTIONS);
  // Node failures are expected in these tests; the commands themselves report them.
  client.on('error', () => {});
  return client;
}

export function valkeyCluster(cluster: RedisCluster): ValkeyCluster {
  const client = new ValkeyCluster(cluster.rootNodes, IOREDIS_STYLE_OPTIONS);
  client.on('error', () => {});
  return client;
}

export async function nodeRedisCluster(cluster: RedisCluster): Promise<NodeRedisCluster> {
  const client = createCluster({
    rootNodes: cluster.rootNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
    defaults: { disableOfflineQueue: true, disableClientInfo: true },
  });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** The three clients, each behind a Redis store. */
export interface ClusterClients {
  readonly ioredis: IoRedisCluster;
  readonly nodeRedis: NodeRedisCluster;
  readonly valkey: ValkeyCluster;
  readonly stores: { readonly name: string; readonly store: Store }[];
  /** A store per client, with these options too (e.g. `functions: false`). */
  storesWith(options: Omit<RedisStoreOptions, 'client'>): { readonly name: string; readonly store: Store }[];
  close(): Promise<void>;
}

export async function connectClients(cluster: RedisCluster): Promise<ClusterClients> {
  const ioredis = ioredisCluster(cluster);
  const valkey = valkeyCluster(cluster);
  const nodeRedis = await nodeRedisCluster(cluster);
  const storesWith = (options: Omit<RedisStoreOptions, 'client'>) => [
    { name: 'ioredis', store: redisStore({ ...options, client: ioredis }) },
    { name: 'node-redis', store: redisStore({ ...options, client: nodeRedis }) },
    { name: 'iovalkey', store: redisStore({ ...options, client: valkey }) },
  ];
  return {
    ioredis,
    nodeRedis,
    valkey,
    stores: storesWith({}),
    storesWith,
    async close() {
      ioredis.disconnect();
      valkey.disconnect();
      nodeRedis.destroy();
    },
  };
}
