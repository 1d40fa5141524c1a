import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe } from 'vitest';
import { redisStore } from '../../src/index.js';
import { runSpecification } from '../algorithms/run-spec.js';
import { persistingIoRedisRunner, persistingNodeRedisRunner } from '../support/persisting-runner.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';

let server: RedisServer;
let ioredis: Redis;
let nodeRedis: ReturnType<typeof createClient>;

beforeAll(async () => {
  server = await startRedisServer();
  ioredis = new Redis(server.port, '127.0.0.1');
  nodeRedis = createClient({ url: server.url });
  await nodeRedis.connect();
});

afterAll(async () => {
  ioredis?.disconnect();
  await nodeRedis?.quit();
  await server?.stop();
});

// Simulated time drives both the script and expiry (see persisting-runner.ts).
describe('specification on Redis through ioredis (script given the same times)', () => {
  runSpecification((clock) => redisStore({ client: persistingIoRedisRunner(ioredis), clock }), 'spec-io');
});

describe('specification on Redis through node-redis (script given the same times)', () => {
  runSpecification(
    (clock) => redisStore({ client: persistingNodeRedisRunner(nodeRedis), clock }),
    'spec-node',
  );
});
