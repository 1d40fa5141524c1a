/**
 * The article's sliding-log limiter ("Distributed Rate Limiting at Scale", section 3), verbatim:
 * a sorted set per key, registered with ioredis defineCommand, called with the *client's* clock.
 * Its member `now .. '-' .. math.random(1000, 9999)` and its use of client time are what the
 * clock-skew scenario exposes.
 */
import type { Redis } from 'ioredis';
import type { Contender } from './types.js';

export const ARTICLE_SCRIPT = `
    local key = KEYS[1]
    local now = tonumber(ARGV[1])
    local window = tonumber(ARGV[2])
    local limit = tonumber(ARGV[3])
    redis.call('ZREMRANGEBYSCORE', key, 0, now - window)
    local current = redis.call('ZCARD', key)
    if current < limit then
      redis.call('ZADD', key, now, now .. '-' .. math.random(1000, 9999))
      redis.call('PEXPIRE', key, window)
      return { 1, limit - current - 1, 0 }
    else
      return { 0, 0, math.ceil(window / 1000) }
    end
  `;

/** `[allowed (0/1), remaining, retryAfterSeconds]`, as the article's script returns it. */
export type ArticleCheck = (key: string, now: number, windowMs: number, limit: number) => Promise<number[]>;

/** Registers the script on `client` (EVALSHA, with ioredis's own NOSCRIPT fallback). */
export function articleCommand(client: Redis): ArticleCheck {
  client.defineCommand('checkSlidingRateLimit', { numberOfKeys: 1, lua: ARTICLE_SCRIPT });
  const command = (client as unknown as Record<string, ArticleCheck>).checkSlidingRateLimit as ArticleCheck;
  return (key, now, windowMs, limit) => command.call(client, key, now, windowMs, limit);
}

export const articleSlidingLog: Contender = {
  name: "the article's sliding-log script",
  short: 'article',
  role: 'peer',
  create(client, policy) {
    const check = articleCommand(client);
    return async (key) =>
      (await check(`ratelimit:client:${key}`, Date.now(), policy.windowMs, policy.limit))[0] === 1;
  },
};
