/** Every contender, in report order: Floodgate's algorithms first, then the peers, then the ceilings. */
import { articleSlidingLog } from './article.js';
import { awaitCeiling, evalshaReturnOne, evalshaReturnOnePipelined, pingCeiling } from './ceilings.js';
import { expressRateLimitMemory, expressRateLimitRedis } from './express-rate-limit.js';
import { fastifyRateLimitMemory, fastifyRateLimitRedis } from './fastify-rate-limit.js';
import { FLOODGATE_ALGORITHMS, floodgateMemory, floodgateRedis } from './floodgate.js';
import {
  rateLimiterFlexibleBlock,
  rateLimiterFlexibleMemory,
  rateLimiterFlexibleRedis,
} from './rate-limiter-flexible.js';
import type { Contender, MemoryContender } from './types.js';

export const REDIS_PEERS: readonly Contender[] = [
  rateLimiterFlexibleRedis,
  rateLimiterFlexibleBlock,
  expressRateLimitRedis,
  fastifyRateLimitRedis,
  articleSlidingLog,
];

export const REDIS_CONTENDERS: readonly Contender[] = [
  ...FLOODGATE_ALGORITHMS.map(floodgateRedis),
  ...REDIS_PEERS,
  pingCeiling,
  evalshaReturnOne,
  evalshaReturnOnePipelined,
];

export const MEMORY_CONTENDERS: readonly MemoryContender[] = [
  ...FLOODGATE_ALGORITHMS.map(floodgateMemory),
  rateLimiterFlexibleMemory,
  expressRateLimitMemory,
  fastifyRateLimitMemory,
  awaitCeiling,
];

export type { Check, Contender, MemoryContender, Policy, Role } from './types.js';
