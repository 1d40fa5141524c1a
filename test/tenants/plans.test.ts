/** Plans: configuration errors, plan selection errors and what a limiter tells about its plans. */
import { describe, expect, it } from 'vitest';
import { createLimiter, type LimiterOptions, memoryStore } from '../../src/index.js';

const free = { name: 'minute', algorithm: 'fixed-window', limit: 10, window: '1m' } as const;
const pro = [
  { name: 'minute', algorithm: 'fixed-window', counts: 'requests', limit: 100, window: '1m' },
  { name: 'day', algorithm: 'sliding-window', limit: 10_000, window: '1d' },
] as const;

describe('plan configuration', () => {
  it.each([
    [{ rules: free, plans: { free } }, 'createLimiter: pass either rules or plans, not both'],
    [{}, 'createLimiter: rules or plans is required'],
    [{ plans: {} }, 'plans: at least one plan is required'],
    [{ plans: [free] }, 'plans: expected an object of plan name → rules, got an array'],
    [{ plans: { 'pro plan': pro } }, 'plans: "pro plan" is not a plan name'],
    [{ plans: { 'a.b': pro } }, 'plans: "a.b" is not a plan name'],
    [
      { plans: { override: pro } },
      `plans: "override" is not a plan name; use 1-64 letters, digits, '_' or '-' (not 'override')`,
    ],
    [{ plans: { free: [] } }, 'plans.free: at least one rule is required'],
    [{ plans: { free, pro: [{ ...pro[0], limit: 0 }] } }, 'plans.pro[0].limit: 0 must be an integer from 1'],
    [{ plans: { free }, defaultPlan: 'pro' }, 'defaultPlan: "pro" is not one of the plans "free"'],
    [
      { rules: free, defaultPlan: 'free' },
      'defaultPlan: only a limiter created with plans has a default plan',
    ],
  ])('%o is refused', (options, message) => {
    expect(() => createLimiter(options as LimiterOptions)).toThrow(message);
  });

  it('describes every plan’s rules, with names qualified by the plan', () => {
    const limiter = createLimiter({ plans: { free, pro }, defaultPlan: 'free' });
    expect(limiter.defaultPlan).toBe('free');
    expect(limiter.plans).toEqual({
      free: [
        {
          name: 'free.minute',
          algorithm: 'fixed-window',
          limit: 10,
          windowMs: 60_000,
          capacity: 10,
          counts: 'cost',
        },
      ],
      pro: [
        {
          name: 'pro.minute',
          algorithm: 'fixed-window',
          limit: 100,
          windowMs: 60_000,
          capacity: 100,
          counts: 'requests',
        },
        {
          name: 'pro.day',
          algorithm: 'sliding-window',
          limit: 10_000,
          windowMs: 86_400_000,
          capacity: 10_000,
          counts: 'cost',
        },
      ],
    });
    expect(limiter.rules.map((rule) => rule.name)).toEqual(['free.minute', 'pro.minute', 'pro.day']);
    const plain = createLimiter({ rules: free });
    expect(plain.plans).toBeUndefined();
    expect(plain.defaultPlan).toBeUndefined();
    expect(plain.rules.map((rule) => rule.name)).toEqual(['minute']);
  });
});

describe('plan selection', () => {
  it('an unknown plan is an error naming the plan and the known ones, never unlimited', async () => {
    const limiter = createLimiter({ plans: { free, pro }, defaultPlan: 'free' });
    await expect(limiter.check('k', { plan: 'enterprise' })).rejects.toThrow(
      new TypeError('plan: unknown plan "enterprise"; the plans are "free", "pro"'),
    );
    await expect(limiter.peek('k', { plan: 7 as never })).rejects.toThrow('plan: unknown plan 7');
    expect((await limiter.check('k')).plan).toBe('free');
  });

  it('with plans and no defaultPlan, a check must name one', async () => {
    const limiter = createLimiter({ plans: { free, pro } });
    await expect(limiter.check('k')).rejects.toThrow(
      'plan: required (this limiter has plans "free", "pro" and no defaultPlan)',
    );
    expect(await limiter.check('k', { plan: 'pro' })).toMatchObject({ plan: 'pro', rule: 'pro.minute' });
  });

  it('a limiter made with rules refuses a plan instead of ignoring it', async () => {
    const limiter = createLimiter({ rules: free });
    await expect(limiter.check('k', { plan: 'pro' })).rejects.toThrow(
      'plan: "pro" given, but this limiter was created with rules, not plans',
    );
    const decision = await limiter.check('k');
    expect('plan' in decision).toBe(false);
  });

  it('reset forgets the key under every plan', async () => {
    const store = memoryStore();
    const limiter = createLimiter({ store, plans: { free, pro } });
    await limiter.check('k', { plan: 'free', cost: 10 });
    await limiter.check('k', { plan: 'pro', cost: 5 });
    expect(store.size).toBe(2);
    await limiter.reset('k');
    expect(store.size).toBe(0);
    expect(await limiter.check('k', { plan: 'free', cost: 10 })).toMatchObject({ allowed: true });
  });
});
