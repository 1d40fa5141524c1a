import fc from 'fast-check';
import { type Item, parseItem, parseList } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import {
  type HeaderTarget,
  rateLimitHeaders,
  retryAfterSeconds,
  writeDenialHeaders,
  writeRateLimitHeaders,
} from '../../src/http/headers.js';
import { quotaExceededProblem } from '../../src/http/problem.js';
import {
  createLimiter,
  type Decision,
  memoryStore,
  type RuleDecision,
  type RuleOptions,
  type Store,
} from '../../src/index.js';

function mapTarget(): HeaderTarget & { fields: Map<string, string> } {
  const fields = new Map<string, string>();
  return {
    fields,
    get: (name) => fields.get(name.toLowerCase()),
    set: (name, value) => void fields.set(name.toLowerCase(), value),
  };
}

function integer(text: string | undefined): number {
  const [value, params] = parseItem(text as string) as Item;
  expect(Number.isInteger(value)).toBe(true);
  expect(params.size).toBe(0);
  return value as number;
}

function list(text: string | undefined): { name: unknown; params: Record<string, number> }[] {
  return parseList(text as string).map((member) => {
    const [name, params] = member as Item;
    return { name, params: Object.fromEntries(params) as Record<string, number> };
  });
}

/** Every invariant the headers of one decision must satisfy. */
function checkHeaders(decision: Decision): void {
  const target = mapTarget();
  const structured = mapTarget();
  writeRateLimitHeaders(target, decision, ['draft-6', 'legacy']);
  writeRateLimitHeaders(structured, decision, ['draft-10']);
  if (!decision.allowed) writeDenialHeaders(target, decision);
  const field = (name: string) => target.get(name);
  const views = decision.rules;
  const windowOf = (windowMs: number) => Math.max(1, Math.ceil(windowMs / 1000));

  // draft-6 and legacy: the binding rule.
  for (const prefix of ['ratelimit', 'x-ratelimit']) {
    expect(integer(field(`${prefix}-limit`))).toBe(decision.limit);
    expect(integer(field(`${prefix}-remaining`))).toBe(decision.remaining);
    const reset = integer(field(`${prefix}-reset`));
    expect(reset).toBeGreaterThanOrEqual(0);
    expect(reset).toBeLessThanOrEqual(windowOf(decision.windowMs));
  }
  // Policies announce the sustained rate; a capacity that differs is the `burst` parameter.
  const burstOf = (view: RuleDecision) => (view.quota === undefined ? {} : { burst: view.limit });
  expect(list(field('ratelimit-policy'))).toEqual(
    views.map((view) => ({
      name: view.quota ?? view.limit,
      params: { w: windowOf(view.windowMs), ...burstOf(view) },
    })),
  );
  // draft-10: one item per rule.
  const policies = list(structured.get('ratelimit-policy'));
  const limits = list(structured.get('ratelimit'));
  expect(policies).toEqual(
    views.map((view) => ({
      name: view.rule,
      params: { q: view.quota ?? view.limit, w: windowOf(view.windowMs), ...burstOf(view) },
    })),
  );
  expect(limits.map((item) => [item.name, item.params.r])).toEqual(views.map((v) => [v.rule, v.remaining]));
  for (const [index, item] of limits.entries()) {
    expect(item.params.t).toBeGreaterThanOrEqual(0);
    expect(item.params.t).toBeLessThanOrEqual(policies[index]?.params.w as number);
  }
  // Denials: Retry-After in whole seconds, never 0, never earlier than any denying rule's t.
  const retry = field('retry-after');
  if (decision.allowed) {
    expect(retry).toBeUndefined();
    expect(field('cache-control')).toBeUndefined();
    return;
  }
  expect(field('cache-control')).toBe('no-store');
  if (!Number.isFinite(decision.retryAfterMs)) {
    expect(retry).toBeUndefined();
    expect(quotaExceededProblem(decision)).not.toHaveProperty('retry-after');
    return;
  }
  expect(retry).toMatch(/^[1-9][0-9]*$/);
  const seconds = Number(retry);
  expect(seconds).toBe(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
  expect(seconds).toBeGreaterThanOrEqual(integer(field('ratelimit-reset')));
  for (const [index, view] of views.entries()) {
    if (!view.allowed) expect(seconds).toBeGreaterThanOrEqual(limits[index]?.params.t as number);
  }
  const problem = quotaExceededProblem(decision);
  expect(problem['retry-after']).toBe(seconds);
  expect(problem['violated-policies']).toEqual(views.filter((v) => !v.allowed).map((v) => v.rule));
}

const ruleArbitrary: fc.Arbitrary<RuleOptions> = fc
  .record({
    algorithm: fc.constantFrom('fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra'),
    limit: fc.integer({ min: 1, max: 20 }),
    window: fc.constantFrom(1, 250, 999, 1000, 1500, 60_000, 3_600_000),
    burst: fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }),
  })
  .map(({ algorithm, limit, window, burst }) => ({
    algorithm,
    limit,
    window,
    ...(burst !== undefined && (algorithm === 'token-bucket' || algorithm === 'gcra') ? { burst } : {}),
  }));

describe('rate-limit headers of real decisions', () => {
  it('parse as RFC 9651 fields and agree with the decision for any rules, costs and times', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(ruleArbitrary, { minLength: 1, maxLength: 3, selector: (r) => JSON.stringify(r) }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5_000_000 }), fc.integer({ min: 1, max: 45 })), {
          minLength: 1,
          maxLength: 25,
        }),
        async (rules, steps) => {
          let now = 1_700_000_000_000;
          const limiter = createLimiter({
            rules: rules.map((rule, index) => ({ ...rule, name: `rule-${index}` })),
            store: memoryStore({ clock: () => now }),
          });
          let previous: Decision | undefined;
          for (const [advance, cost] of steps) {
            // Half the steps happen at the same instant, so counts can be compared exactly.
            const elapsed = advance % 2 === 0 ? 0 : advance;
            now += elapsed;
            const decision = await limiter.check('k', { cost });
            checkHeaders(decision);
            if (elapsed === 0 && previous?.allowed && decision.allowed) {
              for (const [index, view] of decision.rules.entries()) {
                const before = previous.rules[index]?.remaining as number;
                expect(view.remaining).toBe(before - cost);
              }
            }
            previous = decision;
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('regression: RateLimit-Policy announces the sustained rate and the burst as a burst parameter', async () => {
    const limiter = createLimiter({
      rules: [
        { name: 'hourly', algorithm: 'gcra', limit: 5000, window: '1h', burst: 200 },
        { name: 'small', algorithm: 'token-bucket', limit: 100, window: '1m', burst: 10 },
        { name: 'plain', algorithm: 'token-bucket', limit: 7, window: '1m' },
      ],
    });
    const decision = await limiter.check('k', { cost: 3 });
    const draft6 = Object.fromEntries(rateLimitHeaders(decision, ['draft-6']));
    expect(draft6['RateLimit-Policy']).toBe('5000;w=3600;burst=200, 100;w=60;burst=10, 7;w=60');
    // Remaining counts against what can be taken at once: what is really left.
    expect(draft6['RateLimit-Remaining']).toBe('4');
    expect(draft6['RateLimit-Limit']).toBe('7');
    const draft10 = Object.fromEntries(rateLimitHeaders(decision, ['draft-10']));
    expect(draft10['RateLimit-Policy']).toBe(
      '"hourly";q=5000;w=3600;burst=200, "small";q=100;w=60;burst=10, "plain";q=7;w=60',
    );
    expect(draft10.RateLimit).toMatch(/^"hourly";r=197;t=\d+, "small";r=7;t=\d+, "plain";r=4;t=\d+$/);
    // A strict RFC 9651 parser reads both.
    expect(parseList(draft6['RateLimit-Policy'] as string)[0]?.[1].get('burst')).toBe(200);
    expect(parseList(draft10['RateLimit-Policy'] as string)[1]?.[1].get('burst')).toBe(10);
  });

  it('rounds sub-second windows up to w=1 and keeps Reset within it', async () => {
    const limiter = createLimiter({
      rules: { name: 'fast', algorithm: 'fixed-window', limit: 2, window: 200 },
    });
    await limiter.check('k');
    const decision = await limiter.check('k');
    const draft6 = Object.fromEntries(rateLimitHeaders(decision, ['draft-6']));
    expect(draft6['RateLimit-Policy']).toBe('2;w=1');
    expect(Number(draft6['RateLimit-Reset'])).toBeLessThanOrEqual(1);
    const draft10 = Object.fromEntries(rateLimitHeaders(decision, ['draft-10']));
    expect(draft10['RateLimit-Policy']).toBe('"fast";q=2;w=1');
    expect(draft10.RateLimit).toMatch(/^"fast";r=0;t=[01]$/);
  });

  it('clamps a sliding window reset (up to two windows) to the window', async () => {
    const windowStart = 1_700_000_000_000 - (1_700_000_000_000 % 60_000);
    let now = windowStart + 59_000;
    const limiter = createLimiter({
      rules: { name: 'sw', algorithm: 'sliding-window', limit: 2, window: '1m' },
      store: memoryStore({ clock: () => now }),
    });
    await limiter.check('k');
    now = windowStart + 61_000; // the next window, with the previous one still weighing 59/60
    const allowed = await limiter.check('k');
    expect(allowed.allowed).toBe(true);
    expect(allowed.resetMs).toBe(119_000);
    expect(Object.fromEntries(rateLimitHeaders(allowed, ['draft-6']))['RateLimit-Reset']).toBe('60');
    const denied = await limiter.check('k');
    expect(denied.allowed).toBe(false);
    expect(denied.resetMs).toBe(119_000);
    // Denied: Reset is when this request could pass, the same second as Retry-After.
    expect(Object.fromEntries(rateLimitHeaders(denied, ['draft-6']))['RateLimit-Reset']).toBe('59');
    expect(retryAfterSeconds(denied)).toBe(59);
  });

  it('clamps a bucket whose refill is longer than its window, with Retry-After >= Reset', async () => {
    const limiter = createLimiter({
      rules: { name: 'big', algorithm: 'token-bucket', limit: 1, window: '1s', burst: 30 },
    });
    await limiter.check('k', { cost: 30 });
    const denied = await limiter.check('k', { cost: 10 });
    expect(Object.fromEntries(rateLimitHeaders(denied, ['draft-6']))['RateLimit-Reset']).toBe('1');
    expect(Object.fromEntries(rateLimitHeaders(denied, ['draft-10'])).RateLimit).toBe('"big";r=0;t=1');
    expect(retryAfterSeconds(denied)).toBe(10);
  });

  it('leaves Retry-After out when the cost can never pass', async () => {
    const limiter = createLimiter({ rules: { name: 'small', algorithm: 'gcra', limit: 3, window: '1s' } });
    const never = await limiter.check('k', { cost: 4 });
    expect(never.retryAfterMs).toBe(Number.POSITIVE_INFINITY);
    expect(retryAfterSeconds(never)).toBeUndefined();
    expect(quotaExceededProblem(never).detail).toMatch(/will never be allowed/);
  });
});

describe('two limiters on one response', () => {
  const limiterOf = (name: string, limit: number) =>
    createLimiter({ rules: { name, algorithm: 'sliding-log', limit, window: '1m' } });

  it('appends structured list items, so both policies stay readable', async () => {
    const target = mapTarget();
    writeRateLimitHeaders(target, await limiterOf('global', 100).check('k'), ['draft-10']);
    writeRateLimitHeaders(target, await limiterOf('route', 5).check('k'), ['draft-10']);
    expect(list(target.get('RateLimit-Policy'))).toEqual([
      { name: 'global', params: { q: 100, w: 60 } },
      { name: 'route', params: { q: 5, w: 60 } },
    ]);
    expect(list(target.get('RateLimit')).map((item) => [item.name, item.params.r])).toEqual([
      ['global', 99],
      ['route', 4],
    ]);
  });

  it('keeps the more restrictive decision in the draft-6 and legacy fields, the later one on a tie', async () => {
    const strict = await limiterOf('strict', 3).check('k');
    const loose = await limiterOf('loose', 50).check('k');
    for (const [first, second] of [
      [strict, loose],
      [loose, strict],
    ] as const) {
      const target = mapTarget();
      writeRateLimitHeaders(target, first, ['draft-6', 'legacy']);
      writeRateLimitHeaders(target, second, ['draft-6', 'legacy']);
      expect(target.get('RateLimit-Remaining')).toBe('2');
      expect(target.get('X-RateLimit-Limit')).toBe('3');
      expect(target.get('RateLimit-Policy')).toBe(first === strict ? '3;w=60, 50;w=60' : '50;w=60, 3;w=60');
    }
    const tieA = await limiterOf('a', 3).check('k');
    const tieB = createLimiter({ rules: { name: 'b', algorithm: 'sliding-log', limit: 3, window: '1h' } });
    const target = mapTarget();
    writeRateLimitHeaders(target, tieA, ['draft-6']);
    writeRateLimitHeaders(target, await tieB.check('k'), ['draft-6']);
    expect(Number(target.get('RateLimit-Reset'))).toBeGreaterThan(60);
  });

  it('lets a later denial win even when it shows more remaining', async () => {
    const target = mapTarget();
    writeRateLimitHeaders(target, await limiterOf('first', 1).check('k'), ['draft-6']);
    const denial = await limiterOf('second', 10).check('k', { cost: 11 });
    expect(denial.remaining).toBe(10);
    writeRateLimitHeaders(target, denial, ['draft-6']);
    expect(target.get('RateLimit-Remaining')).toBe('10');
    expect(target.get('RateLimit-Limit')).toBe('10');
  });
});

describe('429 body', () => {
  it('says when a denial comes from an unavailable store (onStoreError: closed), not from usage', async () => {
    const broken: Store = {
      kind: 'broken',
      evaluate: async () => {
        throw new Error('store down');
      },
      settle: async () => {},
      reset: async () => {},
      setOverride: async () => {},
      clearOverride: async () => {},
      listOverrides: async () => [],
    };
    const limiter = createLimiter({
      rules: { name: 'minute', algorithm: 'sliding-log', limit: 5, window: '1m' },
      store: broken,
      onStoreError: 'closed',
      breaker: false,
      timeout: '1s',
    });
    const decision = await limiter.check('k');
    expect(decision.degraded).toBe('error');
    const problem = quotaExceededProblem(decision);
    expect(problem.detail).toBe('Rate limiting is temporarily unavailable; retry in 1 second.');
    expect(problem['violated-policies']).toEqual(['minute']);
    checkHeaders(decision);
  });
});
