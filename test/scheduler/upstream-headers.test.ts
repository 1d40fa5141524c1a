import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BudgetReader,
  budgetReader,
  type HeaderDialect,
  MAX_BUDGETS,
  MAX_UPSTREAM_COUNT,
  MAX_UPSTREAM_WAIT_MS,
  type UpstreamReading,
} from '../../src/scheduler/upstream-headers.js';

function reader(option: Parameters<typeof budgetReader>[0]): BudgetReader {
  const read = budgetReader(option);
  if (!read) throw new Error('expected a reader');
  return read;
}

/** Reads `headers` (a plain object) at `now` through `dialect`, with `status` (200 unless given). */
function read(dialect: HeaderDialect, headers: unknown, now = 0, status = 200): UpstreamReading | undefined {
  return reader(dialect)({ status, headers }, now);
}

const DAY = MAX_UPSTREAM_WAIT_MS;

describe('openai dialect', () => {
  it('reads requests and tokens from a real chat completions response', () => {
    const headers = new Headers({
      'x-ratelimit-limit-requests': '5000',
      'x-ratelimit-limit-tokens': '160000',
      'x-ratelimit-limit-tokens_usage_based': '160000',
      'x-ratelimit-remaining-requests': '4999',
      'x-ratelimit-remaining-tokens': '159976',
      'x-ratelimit-remaining-tokens_usage_based': '159976',
      'x-ratelimit-reset-requests': '12ms',
      'x-ratelimit-reset-tokens': '9ms',
      'x-ratelimit-reset-tokens_usage_based': '9ms',
    });
    expect(read('openai', headers)).toEqual({
      budgets: {
        requests: { limit: 5000, remaining: 4999, resetMs: 12 },
        tokens: { limit: 160_000, remaining: 159_976, resetMs: 9 },
      },
    });
  });

  it('reads every Go duration form as ms, rounding up, and a bare number as seconds (Azure)', () => {
    const cases: [string, number | undefined][] = [
      ['34s', 34_000],
      ['6m0s', 360_000],
      ['1h2m3s', 3_723_000],
      ['1.5s', 1500],
      ['0.25s', 250],
      ['1m30.122s', 90_122],
      ['250us', 1],
      ['250µs', 1],
      ['12ns', 1],
      ['0s', 0],
      ['0', 0],
      ['7', 7000],
      ['-1s', undefined],
      ['1x', undefined],
      ['ms', undefined],
      ['1s ', 1000],
      ['', undefined],
      ['s1', undefined],
      ['1s2', undefined],
      [`${'9'.repeat(30)}h`, DAY],
      [`${'1'.repeat(70)}s`, undefined],
    ];
    for (const [reset, expected] of cases) {
      const reading = read('openai', {
        'x-ratelimit-remaining-requests': '1',
        'x-ratelimit-reset-requests': reset,
      });
      expect(reading?.budgets.requests?.resetMs, reset).toBe(expected);
    }
  });

  it("treats Azure's -1 as unknown, and a budget with no count as none", () => {
    const azure = {
      'x-ratelimit-limit-tokens': '-1',
      'x-ratelimit-remaining-tokens': '-1',
      'x-ratelimit-reset-tokens': '0',
    };
    expect(read('openai', azure)).toBeUndefined();
    expect(read('openai', { ...azure, 'x-ratelimit-remaining-requests': '59' })).toEqual({
      budgets: { requests: { remaining: 59 } },
    });
  });

  it('pauses on 429 and 503 for retry-after-ms, else Retry-After, and not on other statuses', () => {
    expect(read('openai', { 'retry-after': '20' }, 0, 429)).toEqual({ retryAfterMs: 20_000, budgets: {} });
    expect(read('openai', { 'retry-after-ms': '1500.5', 'retry-after': '2' }, 0, 429)?.retryAfterMs).toBe(
      1501,
    );
    expect(read('openai', { 'retry-after-ms': '1e3', 'retry-after': '2' }, 0, 503)?.retryAfterMs).toBe(2000);
    expect(read('openai', { 'retry-after': '20' }, 0, 200)).toBeUndefined();
    expect(read('openai', { 'retry-after': '20' }, 0, 500)).toBeUndefined();
  });
});

describe('anthropic dialect', () => {
  // A real response's headers (its Date: Thu, 21 Aug 2025 12:41:00 GMT); the resets are absolute.
  const now = Date.parse('2025-08-21T12:41:00Z');
  const sample = {
    date: 'Thu, 21 Aug 2025 12:41:00 GMT',
    'anthropic-ratelimit-input-tokens-limit': '80000',
    'anthropic-ratelimit-input-tokens-remaining': '80000',
    'anthropic-ratelimit-input-tokens-reset': '2025-08-21T12:40:59Z',
    'anthropic-ratelimit-output-tokens-limit': '16000',
    'anthropic-ratelimit-output-tokens-remaining': '16000',
    'anthropic-ratelimit-output-tokens-reset': '2025-08-21T12:41:00Z',
    'anthropic-ratelimit-requests-limit': '1000',
    'anthropic-ratelimit-requests-remaining': '999',
    'anthropic-ratelimit-requests-reset': '2025-08-21T12:41:01Z',
    'anthropic-ratelimit-tokens-limit': '96000',
    'anthropic-ratelimit-tokens-remaining': '96000',
    'anthropic-ratelimit-tokens-reset': '2025-08-21T12:41:30.250Z',
  };

  it('reads its four budgets, resets made relative to now (a reset in the past is 0)', () => {
    expect(read('anthropic', sample, now)).toEqual({
      budgets: {
        requests: { limit: 1000, remaining: 999, resetMs: 1000 },
        tokens: { limit: 96_000, remaining: 96_000, resetMs: 30_250 },
        'input-tokens': { limit: 80_000, remaining: 80_000, resetMs: 0 },
        'output-tokens': { limit: 16_000, remaining: 16_000, resetMs: 0 },
      },
    });
  });

  it('reads RFC 3339 offsets and fractions, and ignores impossible or sloppy timestamps', () => {
    const cases: [string, number | undefined][] = [
      ['2025-08-21T14:41:30+02:00', 30_000],
      ['2025-08-21T07:41:30.5-05:00', 30_500],
      ['2025-08-21t12:41:02z', 2000],
      ['2025-08-21 12:41:02Z', 2000],
      ['9999-12-31T23:59:59Z', DAY],
      ['1970-01-01T00:00:00Z', 0],
      ['2025-02-30T00:00:00Z', undefined],
      ['2025-08-21T24:00:00Z', undefined],
      ['2025-08-21T12:41:02+25:00', undefined],
      ['2025-08-21T12:41:02', undefined],
      ['2025-08-21', undefined],
      ['1755780062', undefined],
      ['Thu, 21 Aug 2025 12:41:02 GMT', undefined],
    ];
    for (const [reset, expected] of cases) {
      const headers = {
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': reset,
      };
      expect(read('anthropic', headers, now)?.budgets.requests?.resetMs, reset).toBe(expected);
    }
  });

  it('pauses for retry-after on 429, and on 529 (overloaded)', () => {
    const limited = { ...sample, 'anthropic-ratelimit-tokens-remaining': '0', 'retry-after': '30' };
    expect(read('anthropic', limited, now, 429)?.retryAfterMs).toBe(30_000);
    expect(read('anthropic', { 'retry-after': '5' }, now, 529)?.retryAfterMs).toBe(5000);
  });
});

describe('github dialect', () => {
  // A real search response (Date: Mon, 13 Jun 2022 11:48:53 GMT).
  const now = Date.parse('Mon, 13 Jun 2022 11:48:53 GMT');
  const search = {
    'X-RateLimit-Limit': ['30'],
    'X-RateLimit-Remaining': ['14'],
    'X-RateLimit-Reset': ['1655120964'],
    'X-RateLimit-Used': ['16'],
    'X-RateLimit-Resource': ['search'],
  };

  it('reads the primary limit as the budget requests, its epoch-seconds reset made relative', () => {
    expect(read('github', search, now)).toEqual({
      budgets: { requests: { limit: 30, remaining: 14, resetMs: 31_000 } },
    });
  });

  it('derives remaining from used when remaining is missing', () => {
    const headers = { 'x-ratelimit-limit': '5000', 'x-ratelimit-used': '4990' };
    expect(read('github', headers, now)?.budgets.requests).toEqual({ limit: 5000, remaining: 10 });
  });

  it('pauses a 403 or 429 for retry-after, else until the reset when none remain, else a 429 for a minute', () => {
    const exhausted = {
      ...search,
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(now / 1000 + 600),
    };
    expect(read('github', exhausted, now, 403)?.retryAfterMs).toBe(600_000);
    expect(read('github', exhausted, now, 429)?.retryAfterMs).toBe(600_000);
    expect(read('github', { ...search, 'retry-after': '60' }, now, 403)?.retryAfterMs).toBe(60_000);
    expect(read('github', {}, now, 429)).toEqual({ retryAfterMs: 60_000, budgets: {} });
    // A 403 with budget left and no retry-after may be a permission error: no pause.
    expect(read('github', search, now, 403)?.retryAfterMs).toBeUndefined();
    expect(read('github', exhausted, now, 200)?.retryAfterMs).toBeUndefined();
  });
});

describe('ietf dialect', () => {
  it('reads draft-10 RateLimit items by policy name, quotas from RateLimit-Policy', () => {
    const headers = {
      'RateLimit-Policy': 'burst;q=100;w=60,"daily";q=1000;w=86400',
      RateLimit: '"burst";r=40;t=12, daily;r=600;t=3000;pk=:cHsdsRa894==:',
    };
    expect(read('ietf', headers)).toEqual({
      budgets: {
        burst: { remaining: 40, resetMs: 12_000, limit: 100 },
        daily: { remaining: 600, resetMs: 3_000_000, limit: 1000 },
      },
    });
    expect(read('ietf', { RateLimit: '"default";r=50;t=30' })).toEqual({
      budgets: { default: { remaining: 50, resetMs: 30_000 } },
    });
  });

  it('reads items split over several field lines (Node header arrays, Fetch joining)', () => {
    const expected = { budgets: { a: { remaining: 1 }, b: { remaining: 2 } } };
    expect(read('ietf', { ratelimit: ['"a";r=1', '"b";r=2'] })).toEqual(expected);
    const joined = new Headers();
    joined.append('RateLimit', '"a";r=1');
    joined.append('RateLimit', '"b";r=2');
    expect(read('ietf', joined)).toEqual(expected);
  });

  it('ignores a malformed field whole, and items without a non-negative Integer r', () => {
    expect(read('ietf', { RateLimit: '"a";r=5, "b";r=' })).toBeUndefined();
    // Well-formed, but a decimal t is no reset.
    expect(read('ietf', { RateLimit: '"a";r=5;t=1.5' })).toEqual({ budgets: { a: { remaining: 5 } } });
    expect(read('ietf', { RateLimit: '"a";r=1234567890123456' })).toBeUndefined();
    expect(read('ietf', { RateLimit: '"a";r="5", "b";r=-1, "c";r=2.0, "d";t=5, 7;r=1, "e";r=3' })).toEqual({
      budgets: { e: { remaining: 3 } },
    });
    const badPolicy = { RateLimit: '"a";r=5', 'RateLimit-Policy': '"a";q=10;w=' };
    expect(read('ietf', badPolicy)).toEqual({ budgets: { a: { remaining: 5 } } });
  });

  it('reads draft-6 fields, and draft-7 combined fields, as the budget requests', () => {
    const draft6 = {
      'RateLimit-Limit': '100',
      'RateLimit-Remaining': '99',
      'RateLimit-Reset': '60',
      'RateLimit-Policy': '100;w=60',
    };
    expect(read('ietf', draft6)).toEqual({
      budgets: { requests: { limit: 100, remaining: 99, resetMs: 60_000 } },
    });
    expect(read('ietf', { ...draft6, 'RateLimit-Remaining': '99, 98' })?.budgets.requests).toEqual({
      limit: 100,
      resetMs: 60_000,
    });
    expect(read('ietf', { RateLimit: 'limit=100, remaining=25, reset=5' })).toEqual({
      budgets: { requests: { limit: 100, remaining: 25, resetMs: 5000 } },
    });
  });

  it('reads Retry-After as seconds or any of the three HTTP-date forms on 429 and 503', () => {
    const now = Date.parse('Wed, 21 Oct 2015 07:27:00 GMT');
    const cases: [string, number | undefined][] = [
      ['120', 120_000],
      ['0', 0],
      ['Wed, 21 Oct 2015 07:28:00 GMT', 60_000],
      ['Wednesday, 21-Oct-15 07:28:00 GMT', 60_000],
      ['Wed Oct 21 07:28:00 2015', 60_000],
      ['Wed Oct  1 07:28:00 2015', 0],
      ['Tue, 20 Oct 2015 07:28:00 GMT', 0],
      ['Wed, 31 Feb 2015 07:28:00 GMT', undefined],
      ['wed, 21 oct 2015 07:28:00 gmt', undefined],
      ['2015-10-21T07:28:00Z', undefined],
      ['-1', undefined],
      ['1.5', undefined],
      ['NaN', undefined],
    ];
    for (const [value, expected] of cases) {
      expect(read('ietf', { 'Retry-After': value }, now, 503)?.retryAfterMs, value).toBe(expected);
    }
  });
});

describe('hostile headers', () => {
  it('clamps absurd counts and waits, and ignores negative, NaN and non-decimal values', () => {
    const twenty = '9'.repeat(20);
    expect(read('openai', { 'x-ratelimit-remaining-requests': twenty }, 0, 429)?.budgets.requests).toEqual({
      remaining: MAX_UPSTREAM_COUNT,
    });
    expect(read('openai', { 'retry-after': twenty }, 0, 429)?.retryAfterMs).toBe(DAY);
    expect(read('openai', { 'retry-after-ms': twenty }, 0, 429)?.retryAfterMs).toBe(DAY);
    expect(
      read('github', { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': twenty })?.budgets.requests,
    ).toEqual({
      remaining: 0,
      resetMs: DAY,
    });
    expect(read('ietf', { RateLimit: '"a";r=999999999999999;t=999999999999999' })?.budgets.a).toEqual({
      remaining: MAX_UPSTREAM_COUNT,
      resetMs: DAY,
    });
    for (const bad of ['-5', 'NaN', 'Infinity', '1e3', '0x10', ' ', '５']) {
      expect(
        read('openai', { 'x-ratelimit-remaining-requests': bad, 'retry-after': bad }, 0, 429),
        bad,
      ).toBeUndefined();
    }
  });

  it('holds at most MAX_BUDGETS budgets, however many policies a response names', () => {
    const many = Array.from({ length: 1000 }, (_, i) => `"p${i}";r=${i}`).join(',');
    const budgets = read('ietf', { RateLimit: many })?.budgets ?? {};
    expect(Object.keys(budgets)).toHaveLength(MAX_BUDGETS);
    expect(budgets.p15).toEqual({ remaining: 15 });
  });

  it('keeps a policy named __proto__ or constructor as data', () => {
    const reading = read('ietf', { RateLimit: '"__proto__";r=1, constructor;r=2' });
    expect(Object.keys(reading?.budgets ?? {})).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(reading?.budgets)).toBeNull();
  });

  it('survives a response with 100,000 headers', () => {
    const headers: Record<string, string> = {};
    for (let i = 0; i < 100_000; i += 1) headers[`x-junk-${i}`] = 'y'.repeat(8);
    headers['X-RateLimit-Remaining-Requests'] = '3';
    expect(read('openai', headers)).toEqual({ budgets: { requests: { remaining: 3 } } });
  });

  it('never throws, and every count and wait it gives is a whole number in range, whatever the values', () => {
    const names = [
      'retry-after',
      'retry-after-ms',
      'ratelimit',
      'ratelimit-policy',
      'ratelimit-limit',
      'ratelimit-remaining',
      'ratelimit-reset',
      'x-ratelimit-remaining-requests',
      'x-ratelimit-reset-tokens',
      'anthropic-ratelimit-tokens-reset',
      'anthropic-ratelimit-requests-remaining',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-used',
      'x-ratelimit-reset',
    ];
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.stringMatching(/^-?\d{0,22}(\.\d{0,4})?(ms|s|m|h)?$/),
      fc.stringMatching(/^"[a-z]{1,3}";r=-?\d{1,17};t=-?\d{1,17}$/),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
    );
    const headers = fc.dictionary(fc.constantFrom(...names), value);
    const dialect = fc.constantFrom<HeaderDialect>('ietf', 'openai', 'anthropic', 'github');
    const status = fc.constantFrom(200, 403, 429, 503, 529, Number.NaN);
    const inRange = (n: number | undefined, max: number) =>
      n === undefined || (Number.isSafeInteger(n) && n >= 0 && n <= max);
    fc.assert(
      fc.property(dialect, headers, status, fc.integer({ min: 0, max: 4e12 }), (d, h, s, now) => {
        const reading = read(d, h, now, s);
        expect(inRange(reading?.retryAfterMs, DAY)).toBe(true);
        for (const budget of Object.values(reading?.budgets ?? {})) {
          expect(inRange(budget.remaining, MAX_UPSTREAM_COUNT)).toBe(true);
          expect(inRange(budget.limit, MAX_UPSTREAM_COUNT)).toBe(true);
          expect(inRange(budget.resetMs, DAY)).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('header shapes', () => {
  it('reads a Fetch Headers, a Map, a plain object in any case and Node header arrays alike', () => {
    const expected = { budgets: { requests: { remaining: 7 } } };
    expect(read('openai', new Headers({ 'X-RateLimit-Remaining-Requests': '7' }))).toEqual(expected);
    expect(read('openai', new Map([['X-RATELIMIT-REMAINING-REQUESTS', '7']]))).toEqual(expected);
    expect(read('openai', { 'X-Ratelimit-Remaining-Requests': '7' })).toEqual(expected);
    expect(read('openai', { 'x-ratelimit-remaining-requests': ['7'] })).toEqual(expected);
    expect(read('openai', { 'x-ratelimit-remaining-requests': 7 })).toEqual(expected);
  });

  it('reads nothing from headers that are missing or of no known shape', () => {
    for (const headers of [undefined, null, 'x-ratelimit-remaining-requests: 7', 7, [], { a: { b: 1 } }]) {
      expect(read('openai', headers, 0, 429)).toBeUndefined();
    }
    expect(read('openai', { 'x-ratelimit-remaining-requests': ['7', '8'] })).toBeUndefined();
  });
});

describe('the headers option', () => {
  it("defaults to 'ietf', and false reads nothing", () => {
    expect(reader(undefined)({ status: 200, headers: { RateLimit: '"m";r=1' } }, 0)).toEqual({
      budgets: { m: { remaining: 1 } },
    });
    expect(budgetReader(false)).toBeUndefined();
  });

  it('refuses anything else, naming the option, the value and the allowed values', () => {
    expect(() => budgetReader('OpenAI' as HeaderDialect)).toThrow(
      new RangeError(
        `headers: "OpenAI" must be 'ietf', 'openai', 'anthropic', 'github', a function (response) => budget, or false`,
      ),
    );
    for (const bad of [true, 7, {}, null]) {
      expect(() => budgetReader(bad as unknown as HeaderDialect)).toThrow(TypeError);
    }
  });

  it("wraps a function: one budget is named 'requests', a record keeps its names, all clamped", () => {
    const single = reader(() => ({ remaining: 4.7, resetMs: 1500.2, limit: 10 }));
    expect(single({ status: 200, headers: {} }, 0)).toEqual({
      budgets: { requests: { remaining: 4, resetMs: 1501, limit: 10 } },
    });
    const record = reader(() => ({
      requests: { remaining: 1 },
      tokens: { remaining: -5, limit: Number.NaN },
    }));
    expect(record({ status: 200, headers: {} }, 0)).toEqual({ budgets: { requests: { remaining: 1 } } });
    const pause = reader(() => ({ retryAfterMs: Number.POSITIVE_INFINITY }));
    expect(pause({ status: 429, headers: {} }, 0)).toEqual({ retryAfterMs: DAY, budgets: {} });
    expect(reader(() => undefined)({ status: 200, headers: {} }, 0)).toBeUndefined();
  });

  it("reads a 429's Retry-After beside the function, as every dialect does", () => {
    const retry = { status: 429, headers: { 'retry-after': '3' } };
    expect(reader(() => undefined)(retry, 0)).toEqual({ retryAfterMs: 3000, budgets: {} });
    expect(reader(() => ({ remaining: 0, retryAfterMs: 5000 }))(retry, 0)).toEqual({
      retryAfterMs: 5000,
      budgets: { requests: { remaining: 0, retryAfterMs: 5000 } },
    });
    expect(reader(() => undefined)({ ...retry, status: 200 }, 0)).toBeUndefined();
  });

  it('hands the function the response, and lets its exception and a promise reach the caller', () => {
    const seen: unknown[] = [];
    const response = { status: 418, headers: { a: '1' } };
    reader((r) => seen.push(r))(response, 0);
    expect(seen).toEqual([response]);
    const broken = reader(() => {
      throw new Error('boom');
    });
    expect(() => broken(response, 0)).toThrow('boom');
    expect(() => reader(async () => ({ remaining: 1 }))(response, 0)).toThrow(TypeError);
  });
});
