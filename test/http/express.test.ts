import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { memoryStore, redisStore } from '../../src/index.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { runAdapterSuite } from './support/suite.js';

let server: RedisServer;
let client: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  client = new Redis(server.port, '127.0.0.1');
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

runAdapterSuite('express', { name: 'memory', store: () => memoryStore() });
runAdapterSuite('express', { name: 'redis', store: () => redisStore({ client }) });
