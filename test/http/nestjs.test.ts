import 'reflect-metadata';
import { Controller, Get, Module, Req, UseGuards } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
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
  });
});
