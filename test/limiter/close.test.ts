/**
 * limiter.close() settles what is under way and refuses what comes after; a store whose client
 * the application closed is reported as closed (a rejection), not answered by `onStoreError`
 * as a transient failure for ever.
 */

import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Limiter,
  LimiterClosedError,
  memoryStore,
  redisStore,
  StoreClosedError,
} from '../../src/index.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});

const rules = { algorithm: 'fixed-window', limit: 5, window: '1m' } as const;

/** Every way a caller can reach a limiter, each expected to reject once it is closed. */
function everyCall(limiter: Limiter) {
  return {
    check: () => limiter.check('k'),
    peek: () => limiter.peek('k'),
    reset: () => limiter.reset('k'),
    setOverride: () => limiter.setOverride('k', { block: true }),
    clearOverride: () => limiter.clearOverride('k'),
    listOverrides: () => limiter.listOverrides(),
  };
}

describe('limiter.close()', () => {
  it('lets the checks under way finish, resolves after them, and refuses every later call', async () => {
    const client = new Redis(server.port, '127.0.0.1');
    const limiter = createLimiter({
      rules,
      store: redisStore({ client }),
      prefix: 'close',
      timeout: SLOW_MACHINE_TIMEOUT,
    });
    const order: string[] = [];
    const checks = Array.from({ length: 8 }, () =>
      limiter.check('k').then((decision) => {
        order.push('check');
        return decision;
      }),
    );
    const closed = limiter.close().then(() => order.push('closed'));
    const decisions = await Promise.all(checks);
    await closed;
    expect(order).toEqual([...new Array(8).fill('check'), 'closed']);
    expect(decisions.map((decision) => [decision.allowed, decision.degraded])).toEqual([
      ...new Array(5).fill([true, false]),
      ...new Array(3).fill([false, false]),
    ]);
    for (const [name, call] of Object.entries(everyCall(limiter))) {
      await expect(call(), name).rejects.toThrow(LimiterClosedError);
      await expect(call(), name).rejects.toThrow(
        `floodgate: limiter.${name}() was called after limiter.close()`,
      );
    }
    await expect(limiter.settle(decisions[0] as never, 1)).rejects.toThrow(LimiterClosedError);
    // Idempotent.
    await limiter.close();
    client.disconnect();
  });

  it('closes a limiter on the memory store too', async () => {
    const limiter = createLimiter({ rules, store: memoryStore() });
    expect((await limiter.check('k')).allowed).toBe(true);
    await limiter.close();
    await expect(limiter.check('k')).rejects.toThrow(LimiterClosedError);
    await expect(limiter.peek('k')).rejects.toThrow('limiter.peek() was called after limiter.close()');
  });
});

describe('a store whose client the application closed', () => {
  const clients = {
    ioredis: async () => {
      const client = new Redis(server.port, '127.0.0.1');
      return { client, close: async () => void (await client.quit()) };
    },
    'node-redis': async () => {
      const client = createClient({ url: server.url });
      await client.connect();
      return { client, close: async () => void (await client.close()) };
    },
  };

  it.each(Object.keys(clients))(
    'regression: %s: checks were allowed for ever (degraded); they now reject as closed',
    async (name) => {
      const { client, close } = await clients[name as keyof typeof clients]();
      const limiter = createLimiter({
        rules,
        store: redisStore({ client }),
        prefix: `closed-${name}`,
        timeout: SLOW_MACHINE_TIMEOUT,
      });
      const events: string[] = [];
      limiter.on('degraded', ({ reason }) => events.push(`degraded ${reason}`));
      limiter.on('storeError', () => events.push('storeError'));
      const allowed = await limiter.check('k');
      expect(allowed.degraded).toBe(false);
      await close();
      // Past the breaker's 5 failures: a closed client is not a failure to wait out.
      for (let i = 0; i < 8; i++) {
        await expect(limiter.check('k')).rejects.toThrow(StoreClosedError);
      }
      await expect(limiter.peek('k')).rejects.toThrow("the redis store's client is closed");
      // settle never throws: the closed store is reported as a store error.
      await limiter.settle(allowed, 3);
      expect(events).toEqual(['storeError']);
    },
  );
});
