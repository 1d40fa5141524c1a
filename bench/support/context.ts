/** What every scenario is given: the bench's Redis, an admin connection to it, the settings, a logger. */
import type { Redis } from 'ioredis';
import type { RedisServer } from './redis.js';
import type { Settings } from './settings.js';

export interface BenchContext {
  server: RedisServer;
  /** For FLUSHALL, INFO and MEMORY USAGE between runs; never used by a contender. */
  admin: Redis;
  settings: Settings;
  log(message: string): void;
}

/** Distinct user keys, built once so that building strings is not part of any measurement. */
export function userKeys(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `user-${String(i).padStart(6, '0')}`);
}
