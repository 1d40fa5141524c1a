import type { Redis } from 'ioredis';
import { describe } from 'vitest';
import { redisStore } from '../../src/index.js';
import { runSpecification } from '../algorithms/run-spec.js';
import { persistingIoRedisRunner, persistingNodeRedisRunner } from '../support/persisting-runner.js';
import { type NodeRedisClient, useRedisServerWithNodeRedis } from '../support/redis-server.js';

let ioredis: Redis;
let nodeRedis: NodeRedisClient;
useRedisServerWithNodeRedis((started) => {
  ioredis = started.client;
  nodeRedis = started.nodeRedis;
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
