/**
 * The Redis store reads `maxmemory-policy` once and the limiter emits `warning` once for an
 * `allkeys-*` policy, which may evict overrides and limiter state; `noeviction` and `volatile-*`
 * are quiet, and so is a user whose ACL denies CONFIG.
 */

import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import { createLimiter, redisStore, type Store, type StoreWarning } from '../../../src/index.js';
import {
  type NodeRedisClient,
  type RedisServer,
  useRedisServerWithNodeRedis,
} from '../../support/redis-server.js';

let server: RedisServer;
let ioredis: Redis;
let nodeRedis: NodeRedisClient;
useRedisServerWithNodeRedis((started) => {
  ({ server, client: ioredis, nodeRedis } = started);
});

/** The warnings a new limiter on `store` emits, once its store has been inspected. */
async function warningsOf(store: Store): Promise<StoreWarning[]> {
  const warnings: StoreWarning[] = [];
  const limiter = createLimiter({ rules: { algorithm: 'gcra', limit: 5, window: '1s' }, store });
  limiter.on('warning', (info) => warnings.push(info));
  // The limiter's listener on the same (memoized) inspection ran before this await resumes.
  await store.inspect?.();
  await limiter.check('k');
  await limiter.close();
  return warnings;
}

describe.each(['ioredis', 'node-redis'])('through %s', (name) => {
  const client = () => (name === 'ioredis' ? ioredis : nodeRedis);

  it.each(['allkeys-lru', 'allkeys-lfu', 'allkeys-random'])(
    '%s: one warning naming the risk',
    async (policy) => {
      await ioredis.config('SET', 'maxmemory-policy', policy);
      const warnings = await warningsOf(redisStore({ client: client() }));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.code).toBe('maxmemory-policy');
      expect(warnings[0]?.message).toContain(`Redis maxmemory-policy is ${policy}`);
      expect(warnings[0]?.message).toContain('overrides');
      expect(warnings[0]?.message).toContain('use noeviction');
    },
  );

  it.each(['noeviction', 'volatile-lru', 'volatile-ttl'])('%s: no warning', async (policy) => {
    await ioredis.config('SET', 'maxmemory-policy', policy);
    expect(await warningsOf(redisStore({ client: client() }))).toEqual([]);
  });
});

it('is read once the client connects, when the limiter was created before it', async () => {
  await ioredis.config('SET', 'maxmemory-policy', 'allkeys-lru');
  const lazy = new Redis({
    port: server.port,
    host: '127.0.0.1',
    lazyConnect: true,
    enableOfflineQueue: false,
  });
  const node = createClient({ url: server.url });
  try {
    const warned = [redisStore({ client: lazy }), redisStore({ client: node })].map((store) => {
      const limiter = createLimiter({ rules: { algorithm: 'gcra', limit: 5, window: '1s' }, store });
      return new Promise<StoreWarning>((resolve) => limiter.on('warning', resolve));
    });
    await Promise.all([lazy.connect(), node.connect()]);
    expect((await Promise.all(warned)).map((warning) => warning.code)).toEqual([
      'maxmemory-policy',
      'maxmemory-policy',
    ]);
  } finally {
    lazy.disconnect();
    await node.close();
    await ioredis.config('SET', 'maxmemory-policy', 'noeviction');
  }
});

it('a user whose ACL denies CONFIG is not inspected, and its checks work', async () => {
  await ioredis.config('SET', 'maxmemory-policy', 'allkeys-lru');
  await ioredis.call('ACL', 'SETUSER', 'noconfig', 'on', '>secret', '~*', '&*', '+@all', '-config');
  const limited = new Redis({
    port: server.port,
    host: '127.0.0.1',
    username: 'noconfig',
    password: 'secret',
  });
  try {
    await expect(limited.config('GET', 'maxmemory-policy')).rejects.toThrow('NOPERM');
    expect(await warningsOf(redisStore({ client: limited }))).toEqual([]);
  } finally {
    limited.disconnect();
    await ioredis.config('SET', 'maxmemory-policy', 'noeviction');
  }
});
