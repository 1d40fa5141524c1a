/**
 * Calendar rule fields: refused where they make no sense (at construction, in plans and in
 * setOverride) with the field and the bad value named; and per tenant, an override's own zone
 * and anchor counting at runtime on both stores. Redis keys expire at their period's end.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLimiter, memoryStore, type RuleOptions, redisStore, type Store } from '../../src/index.js';
import { useRedisServer } from '../support/redis-server.js';

let io: Redis;
useRedisServer((started) => {
  io = started.client;
});

const MONTHLY = { name: 'monthly', algorithm: 'fixed-window', limit: 3, period: 'month' } as const;

/** A rule made of `MONTHLY` with `fields` added or (undefined) removed. */
function monthly(fields: Record<string, unknown>): RuleOptions {
  const rule: Record<string, unknown> = { ...MONTHLY };
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) delete rule[key];
    else rule[key] = value;
  }
  return rule as unknown as RuleOptions;
}

const REFUSED: [string, Record<string, unknown>, string][] = [
  [
    'a period on another algorithm',
    { algorithm: 'sliding-window' },
    `rules.period: "month" is not allowed with 'sliding-window'`,
  ],
  ['a period with a window', { window: '30d' }, 'rules.window: "30d" is not allowed with period'],
  [
    'an unknown period',
    { period: 'fortnight' },
    `rules.period: "fortnight" is not one of 'day', 'week', 'month', 'year'`,
  ],
  [
    'an unknown time zone',
    { timeZone: 'Mars/Olympus_Mons' },
    'rules.timeZone: "Mars/Olympus_Mons" is not an IANA time zone',
  ],
  ['a time zone that is not a string', { timeZone: 5 }, 'rules.timeZone: 5 is not an IANA time zone'],
  [
    'an anchor with an offset',
    { anchor: '2026-01-31T09:30Z' },
    'rules.anchor: "2026-01-31T09:30Z" must be a real local date-time without offset',
  ],
  [
    'an anchor on no real date',
    { anchor: '2026-02-30' },
    'rules.anchor: "2026-02-30" must be a real local date-time',
  ],
  ['an anchor that is not a string', { anchor: 20260131 }, 'rules.anchor: 20260131 must be a string'],
  ['a threshold of 0', { thresholds: [0, 1] }, 'rules.thresholds[0]: 0 must be a fraction in (0, 1]'],
  [
    'a threshold above 1',
    { thresholds: [0.8, 1.5] },
    'rules.thresholds[1]: 1.5 must be a fraction in (0, 1]',
  ],
  ['no thresholds', { thresholds: [] }, 'rules.thresholds: an array must be an array of 1 to 20 fractions'],
  [
    'a time zone without period',
    { period: undefined, window: '1d', timeZone: 'UTC' },
    'rules.timeZone: "UTC" is not allowed without period',
  ],
  [
    'an anchor without period',
    { period: undefined, window: '1d', anchor: '2026-01-01' },
    'rules.anchor: "2026-01-01" is not allowed without period',
  ],
  [
    'thresholds without period',
    { period: undefined, window: '1d', thresholds: [1] },
    'rules.thresholds: an array is not allowed without period',
  ],
  ['quota leasing by period', { quotaLease: true }, 'rules.quotaLease: not allowed with period'],
];

describe('calendar rule fields', () => {
  it.each(REFUSED)('refuses %s at construction, naming the field and the value', (_, fields, message) => {
    expect(() => createLimiter({ store: memoryStore(), rules: monthly(fields) })).toThrow(message);
  });

  it('refuses them in plans and in setOverride too', async () => {
    expect(() =>
      createLimiter({
        store: memoryStore(),
        plans: { pro: monthly({ timeZone: 'Nowhere/Land' }) },
        defaultPlan: 'pro',
      }),
    ).toThrow('plans.pro.timeZone: "Nowhere/Land" is not an IANA time zone');
    const limiter = createLimiter({ store: memoryStore(), rules: MONTHLY });
    await expect(limiter.setOverride('tenant', [monthly({ anchor: '31/01/2026' })])).rejects.toThrow(
      'override[0].anchor: "31/01/2026" must be a real local date-time',
    );
    await expect(limiter.setOverride('tenant', [monthly({ thresholds: [2] })])).rejects.toThrow(
      'override[0].thresholds[0]: 2 must be a fraction in (0, 1]',
    );
  });

  it('names a rule by its period by default, and takes a limit in the millions', async () => {
    expect(() =>
      createLimiter({ store: memoryStore(), rules: monthly({ limit: 10_000_000 }) }),
    ).not.toThrow();
    const limiter = createLimiter({
      store: memoryStore(),
      rules: { algorithm: 'fixed-window', limit: 9, period: 'week' },
    });
    expect((await limiter.check('k')).rule).toBe('fixed-window-9-per-week');
  });
});

const START = Date.parse('2026-01-31T22:00Z');
const stores: [string, (clock: () => number) => Store][] = [
  ['memory', (clock) => memoryStore({ clock })],
  ['Redis', (clock) => redisStore({ client: io, clock })],
];
let prefixes = 0;

describe.each(stores)('calendar rules per tenant on %s', (_, storeOf) => {
  it("an override's own zone and anchor apply from the next check, without a deploy", async () => {
    let now = START;
    const limiter = createLimiter({
      store: storeOf(() => now),
      rules: MONTHLY,
      prefix: `cal${prefixes++}`,
      timeout: '5s',
    });
    // UTC: January ends in 2 hours.
    expect((await limiter.check('tenant')).resetMs).toBe(2 * 3_600_000);
    // In Tokyo it is already Feb 1 07:00; the tenant's billing month starts on the 15th at 09:00.
    await limiter.setOverride('tenant', [monthly({ timeZone: 'Asia/Tokyo', anchor: '2026-01-15T09:00' })]);
    const decision = await limiter.check('tenant');
    expect(decision.resetMs).toBe(Date.parse('2026-02-15T00:00Z') - START);
    now += 1000;
    expect((await limiter.check('tenant')).remaining).toBe(1);
  });
});

describe('calendar rules on Redis', () => {
  it("expire their keys at the period's end, on the caller's clock as the script reads it", async () => {
    const now = Date.parse('2026-03-08T04:00Z');
    const limiter = createLimiter({
      store: redisStore({ client: io, clock: () => now }),
      rules: monthly({ period: 'day', timeZone: 'America/New_York' }),
      prefix: 'ttl',
    });
    await limiter.check('k');
    const [key] = await io.keys('ttl:*monthly*');
    const ttl = await io.pttl(key as string);
    // 23:00 EST: the day ends in an hour (give or take the milliseconds the test itself took).
    expect(ttl).toBeLessThanOrEqual(3_600_000);
    expect(ttl).toBeGreaterThan(3_600_000 - 5_000);
  });

  it("decides on the server's clock: the period around Redis's TIME, not the caller's", async () => {
    const limiter = createLimiter({
      store: redisStore({ client: io }),
      rules: monthly({ period: 'day' }),
      prefix: 'srv',
    });
    const [seconds, micros] = await io.time();
    const serverNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const dayEnd = Math.ceil((serverNow + 1) / 86_400_000) * 86_400_000;
    const decision = await limiter.check('k');
    expect(decision.resetMs).toBeGreaterThan(dayEnd - serverNow - 5_000);
    expect(decision.resetMs).toBeLessThanOrEqual(dayEnd - serverNow);
  });
});
