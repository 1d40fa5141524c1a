/**
 * The least privilege the README documents for Floodgate's Redis user is enough for every
 * operation: checks and peeks of all five algorithms in one limiter, a settle, a reset, and
 * overrides set, listed and cleared; with functions, and with `functions: false` for a user that
 * may not run or load them.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, createOverrideAdmin, redisStore } from '../../../src/index.js';
import { commandCalls, type RedisServer, useRedisServer } from '../../support/redis-server.js';
import { FIVE_ALGORITHM_RULES } from '../../support/rules.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

let server: RedisServer;
let admin: Redis;
useRedisServer((started) => {
  server = started.server;
  admin = started.client;
});

/** The commands the README lists, as ACL rules (the scripts' own commands run under them too). */
const SCRIPT_COMMANDS =
  '+evalsha +eval +time +mget +psetex +set +del +exists +hset +hdel +hgetall +pexpire +pttl +zadd +zcount +zrange +zrangebyscore +zrem +zremrangebyscore +zscore';
const FUNCTION_COMMANDS = '+fcall +function|load';
/** What ioredis itself sends on connecting (its ready check). */
const CLIENT_COMMANDS = '+info';

describe('a Redis user with only the documented permissions', () => {
  it.each([
    { name: 'with functions', acl: `${SCRIPT_COMMANDS} ${FUNCTION_COMMANDS}`, functions: true },
    { name: 'with functions: false', acl: SCRIPT_COMMANDS, functions: false },
  ])('$name: checks, settles, resets and overrides all work', async ({ name, acl, functions }) => {
    const user = `fg-${functions ? 'fn' : 'eval'}`;
    const prefix = `acl${functions ? 'fn' : 'eval'}`;
    await admin.call(
      'ACL',
      'SETUSER',
      user,
      'reset',
      'on',
      'nopass',
      `~${prefix}:*`,
      ...`${acl} ${CLIENT_COMMANDS}`.split(' '),
    );
    // Nothing loaded or cached beforehand: the user must be able to load what it runs.
    await admin.call('FUNCTION', 'FLUSH');
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    const client = new Redis({ port: server.port, username: user, password: 'unused', lazyConnect: true });
    await client.connect();
    try {
      const store = redisStore({ client, functions });
      const errors: unknown[] = [];
      const limiter = createLimiter({
        rules: FIVE_ALGORITHM_RULES,
        store,
        prefix,
        timeout: SLOW_MACHINE_TIMEOUT,
      }).on('storeError', (cause) => errors.push(cause));
      const decisions = [];
      for (let i = 0; i < 4; i++) decisions.push(await limiter.check('tenant'));
      expect(decisions.map((decision) => [decision.allowed, decision.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      expect((await limiter.peek('other')).remaining).toBe(2);
      // Reserve 2, use 1: the settle refunds one.
      const reserved = await limiter.check('settled', { cost: 2 });
      expect(reserved.remaining).toBe(1);
      await limiter.settle(reserved, 1);
      expect((await limiter.peek('settled')).remaining).toBe(1);
      await limiter.reset('tenant');
      expect((await limiter.check('tenant')).remaining).toBe(2);

      // Concurrency slots: taken, renewed, released, reset.
      const slots = createLimiter({
        rules: { name: 'inflight', algorithm: 'concurrency', limit: 1 },
        store,
        prefix,
        timeout: SLOW_MACHINE_TIMEOUT,
      }).on('storeError', (cause) => errors.push(cause));
      const held = await slots.check('tenant');
      expect([held.allowed, (await slots.check('tenant')).allowed]).toEqual([true, false]);
      expect(await slots.renew(held)).toBe(true);
      await slots.release(held);
      expect((await slots.check('tenant')).allowed).toBe(true);
      await slots.reset('tenant');
      expect((await slots.peek('tenant')).inFlight).toBe(0);

      const overrides = createOverrideAdmin({ store, prefix });
      await overrides.set('vip', 'pro', { ttl: '1h' });
      expect((await overrides.list()).map((entry) => entry.key)).toEqual(['vip']);
      await overrides.clear('vip');
      expect(await overrides.list()).toEqual([]);

      expect(errors, name).toEqual([]);
      expect(decisions.every((decision) => decision.degraded === false)).toBe(true);
      if (functions) {
        expect(await commandCalls(admin, 'fcall')).toBeGreaterThan(0);
        expect(await commandCalls(admin, 'evalsha')).toBe(0);
      } else {
        expect(await commandCalls(admin, 'fcall')).toBe(0);
      }
    } finally {
      client.disconnect();
      await admin.call('ACL', 'DELUSER', user);
    }
  });
});
