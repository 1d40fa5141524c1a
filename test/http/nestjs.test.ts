import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Get, Module, Req, UseGuards } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule, type ThrottlerOptions } from '@nestjs/throttler';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FloodgateGuard,
  type FloodgateRequest,
  FloodgateThrottlerStorage,
  RateLimit,
  SkipRateLimit,
} from '../../src/http/nestjs.js';
import { createLimiter, memoryStore, redisStore } from '../../src/index.js';
import { MAX_BLOCK_MS } from '../../src/rules.js';
import type { App } from './support/apps.js';
import { header, listField, rateLimitHeaderNames } from './support/client.js';
import { startNestApp } from './support/nest.js';
import { runAdapterSuite, runAdapterSuiteOnStores } from './support/suite.js';

let client: Redis;
runAdapterSuiteOnStores('nest-express', (started) => {
  client = started;
});
runAdapterSuite('nest-fastify', { name: 'memory', store: () => memoryStore() });
runAdapterSuite('nest-fastify', {
  name: 'redis',
  store: () => redisStore({ client }),
  keys: () => client.keys('*'),
});

@Controller('limited')
class LimitedController {
  @Get('login')
  @RateLimit({ rules: { name: 'login', algorithm: 'sliding-log', limit: 1, window: '1m' } })
  login(@Req() req: FloodgateRequest) {
    return { rule: req.rateLimit?.rule, remaining: req.rateLimit?.remaining };
  }

  @Get('health')
  @SkipRateLimit()
  health() {
    return 'ok';
  }

  @Get('other')
  other(@Req() req: FloodgateRequest) {
    return { rule: req.rateLimit?.rule, remaining: req.rateLimit?.remaining };
  }
}

@Module({ controllers: [LimitedController] })
class LimitedModule {}

const perController = createLimiter({
  rules: { name: 'guarded', algorithm: 'sliding-log', limit: 1, window: '1m' },
  prefix: `nest-per-controller-${process.pid}`,
});

@Controller('guarded')
@UseGuards(new FloodgateGuard({ limiter: perController }))
class GuardedController {
  @Get()
  get() {
    return 'guarded';
  }
}

@Controller('open')
class OpenController {
  @Get()
  get() {
    return 'open';
  }
}

@Module({ controllers: [GuardedController, OpenController] })
class PerControllerModule {}

describe.each(['express', 'fastify'] as const)('nest on %s: decorators and @nestjs/throttler', (platform) => {
  const apps: App[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  const prefix = () => `nest-${platform}-${Math.random().toString(36).slice(2)}`;

  it('@RateLimit adds a route limiter (own prefix, guard store), @SkipRateLimit exempts a route', async () => {
    const limiter = createLimiter({
      rules: { name: 'global', algorithm: 'sliding-log', limit: 5, window: '1m' },
      store: redisStore({ client }),
      prefix: prefix(),
      timeout: '10s',
    });
    const app = await startNestApp(LimitedModule, platform, false, (nest) => {
      nest.useGlobalGuards(new FloodgateGuard({ limiter, headers: 'draft-10' }));
    });
    apps.push(app);
    const login = await fetch(`${app.url}/limited/login`);
    expect(await login.json()).toEqual({ rule: 'login', remaining: 0 });
    expect(listField(login, 'RateLimit').map((item) => [item.name, item.params.r])).toEqual([
      ['global', 4],
      ['login', 0],
    ]);
    const denied = await fetch(`${app.url}/limited/login`);
    expect(denied.status).toBe(429);
    expect(header(denied, 'content-type')).toMatch(/^application\/problem\+json/);
    expect(((await denied.json()) as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'login',
    ]);
    // The route limiter's counts live in the guard's store under a prefix of the route's own.
    const names = await client.keys(`${limiter.prefix}:LimitedController.login:*`);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name).toMatch(/:\{ip:127\.0\.0\.1\}:login:/);
    for (let i = 0; i < 3; i++) {
      const health = await fetch(`${app.url}/limited/health`);
      expect(health.status).toBe(200);
      expect(rateLimitHeaderNames(health)).toEqual([]);
    }
    const other = await fetch(`${app.url}/limited/other`);
    expect(await other.json()).toEqual({ rule: 'global', remaining: 2 });
  });

  it('a guard per controller (@UseGuards) limits that controller only', async () => {
    const app = await startNestApp(PerControllerModule, platform, false, () => {});
    apps.push(app);
    // Both platforms' runs of this test share the decorator's limiter: each starts from a reset key.
    await perController.reset('ip:127.0.0.1');
    expect((await fetch(`${app.url}/guarded`)).status).toBe(200);
    const denied = await fetch(`${app.url}/guarded`);
    expect(denied.status).toBe(429);
    expect(((await denied.json()) as { 'violated-policies': string[] })['violated-policies']).toEqual([
      'guarded',
    ]);
    for (let i = 0; i < 3; i++) {
      const open = await fetch(`${app.url}/open`);
      expect(open.status).toBe(200);
      expect(rateLimitHeaderNames(open)).toEqual([]);
    }
  });

  it('FloodgateThrottlerStorage: two Nest apps share one Redis count, exactly limit per ttl', async () => {
    const storage = new FloodgateThrottlerStorage({ store: redisStore({ client }), prefix: prefix() });
    @Module({
      imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: 3 }], storage })],
      controllers: [LimitedController],
      providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
    })
    class ThrottledModule {}
    const first = await startNestApp(ThrottledModule, platform, false, () => {});
    const second = await startNestApp(ThrottledModule, platform, false, () => {});
    apps.push(first, second);
    const statuses: number[] = [];
    const remaining: (string | null)[] = [];
    for (const app of [first, second, first, second, first]) {
      const response = await fetch(`${app.url}/limited/other`);
      statuses.push(response.status);
      remaining.push(response.headers.get('x-ratelimit-remaining'));
      if (response.status === 429) {
        const wait = Number(response.headers.get('retry-after'));
        expect(wait).toBeGreaterThanOrEqual(59);
        expect(wait).toBeLessThanOrEqual(60);
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(remaining.slice(0, 3)).toEqual(['2', '1', '0']);
  });
});

// Each store on one platform: the storage is the same on both (the suite above covers the platforms).
describe.each([
  { store: 'memory', platform: 'express' },
  { store: 'redis', platform: 'fastify' },
] as const)(
  'FloodgateThrottlerStorage blockDuration ($store store, nest on $platform)',
  ({ store, platform }) => {
    const apps: App[] = [];
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((app) => app.close()));
    });
    const until = (time: number) => sleep(Math.max(0, time - performance.now()));

    /** A Nest app with one throttler over a new storage, and the blockDurations the storage receives. */
    async function start(throttler: ThrottlerOptions) {
      const prefix = `nest-block-${store}-${Math.random().toString(36).slice(2)}`;
      const storage = new FloodgateThrottlerStorage({
        store: store === 'redis' ? redisStore({ client }) : memoryStore(),
        prefix,
      });
      const received: number[] = [];
      const increment = storage.increment.bind(storage);
      storage.increment = (key, ttl, limit, blockDuration, name) => {
        received.push(blockDuration);
        return increment(key, ttl, limit, blockDuration, name);
      };
      @Module({
        imports: [ThrottlerModule.forRoot({ throttlers: [throttler], storage })],
        controllers: [LimitedController],
        providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
      })
      class ThrottledModule {}
      const app = await startNestApp(ThrottledModule, platform, false, () => {});
      apps.push(app);
      const get = () => fetch(`${app.url}/limited/other`);
      const keys = () => client.keys(`${prefix}:*`);
      return { get, received, keys, prefix };
    }

    it('a blockDuration longer than ttl keeps denying after the window, until the block ends', async () => {
      const { get, received, keys, prefix } = await start({ ttl: 300, limit: 2, blockDuration: 1200 });
      expect((await get()).status).toBe(200);
      expect((await get()).status).toBe(200);
      const sent = performance.now();
      const denied = await get();
      const answered = performance.now();
      expect(denied.status).toBe(429);
      expect(denied.headers.get('retry-after')).toBe('2'); // the block's 1200 ms, not the window's
      if (store === 'redis') {
        // The block's state lives beside the log, under the throttler's usual prefix.
        const names = await keys();
        for (const name of names) expect(name.startsWith(`${prefix}:300:2:`)).toBe(true);
        expect(names.some((name) => name.endsWith(':block'))).toBe(true);
      }
      // Past the window of the counted requests (all sent before `sent`), inside the block
      // (which began at or after `sent`): a request reaching the server within 600 ms is denied.
      await until(sent + 600);
      const blocked = await get();
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // The block began by `answered`: 300 ms after its end, the client is admitted again.
      await until(answered + 1200 + 300);
      expect((await get()).status).toBe(200);
      expect(new Set(received)).toEqual(new Set([1200]));
    });

    it('a throttler without blockDuration (Nest passes the ttl) keeps the plain sliding log', async () => {
      const { get, received, keys, prefix } = await start({ ttl: 1000, limit: 2 });
      expect((await get()).status).toBe(200);
      const first = performance.now();
      await sleep(700);
      expect((await get()).status).toBe(200);
      const denied = await get();
      expect(denied.status).toBe(429);
      expect(denied.headers.get('retry-after')).toBe('1');
      // Once the first request has left the window, the next is admitted; a block of a ttl from
      // the denial (~700 ms after the first) would still hold.
      await until(first + 1000 + 250);
      expect((await get()).status).toBe(200);
      expect(new Set(received)).toEqual(new Set([1000]));
      if (store === 'redis') {
        const names = await keys();
        expect(names.length).toBeGreaterThan(0);
        for (const name of names) expect(name.startsWith(`${prefix}:1000:2:`)).toBe(true);
        expect(names.some((name) => name.endsWith(':block'))).toBe(false);
      }
    });
  },
);

describe('FloodgateThrottlerStorage options', () => {
  it('rejects unknown options and bad prefixes by name', () => {
    expect(() => new FloodgateThrottlerStorage({ stroe: memoryStore() } as never)).toThrow(/stroe/);
    expect(() => new FloodgateThrottlerStorage({ store: {} as never })).toThrow(
      'store: expected memoryStore(), redisStore({ client }) or another Store, got an object',
    );
    expect(() => new FloodgateThrottlerStorage({ prefix: 'a{b}' })).toThrow(
      /^prefix: "a\{b\}" must be 1-64 characters/,
    );
  });

  it('maps decisions to the record @nestjs/throttler reads', async () => {
    const storage = new FloodgateThrottlerStorage();
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toEqual({
      totalHits: 1,
      timeToExpire: 10,
      isBlocked: false,
      timeToBlockExpire: 0,
    });
    expect((await storage.increment('k', 10_000, 2, 10_000, 'default')).totalHits).toBe(2);
    expect(await storage.increment('k', 10_000, 2, 10_000, 'default')).toEqual({
      totalHits: 3,
      timeToExpire: 10,
      isBlocked: true,
      timeToBlockExpire: 10,
    });
    // Another throttler (name, ttl, limit) counts on its own.
    expect((await storage.increment('k', 1_000, 5, 1_000, 'short')).totalHits).toBe(1);
    await expect(storage.increment('k', 0, 5, 0, 'broken')).rejects.toThrow(
      "FloodgateThrottlerStorage: throttler 'broken' has ttl 0 and limit 5; both must be positive integers (ttl in milliseconds)",
    );
    // A blockDuration other than the ttl blocks: Retry-After (timeToBlockExpire) at its end.
    expect((await storage.increment('b', 10_000, 1, 30_000, 'blocking')).isBlocked).toBe(false);
    expect(await storage.increment('b', 10_000, 1, 30_000, 'blocking')).toEqual({
      totalHits: 2,
      timeToExpire: 30,
      isBlocked: true,
      timeToBlockExpire: 30,
    });
  });

  it('rejects a blockDuration that is not an integer from 0 to 366 days, naming the throttler', async () => {
    const storage = new FloodgateThrottlerStorage();
    for (const blockDuration of [-1, 1.5, Number.NaN, MAX_BLOCK_MS + 1]) {
      await expect(storage.increment('k', 1_000, 5, blockDuration, 'strict')).rejects.toThrow(
        `FloodgateThrottlerStorage: throttler 'strict' has blockDuration ${blockDuration}; it must be an integer from 0 to 31622400000 (366 days, in milliseconds)`,
      );
    }
    // The largest block is allowed.
    expect((await storage.increment('k', 1_000, 5, MAX_BLOCK_MS, 'strict')).isBlocked).toBe(false);
  });
});
