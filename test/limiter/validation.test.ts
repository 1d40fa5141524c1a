/**
 * Every invalid option fails where it is given (createLimiter, the store factories, or check for
 * per-request options) with an error naming the option, the value and what is allowed.
 */
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type LimiterOptions,
  memoryStore,
  parseDuration,
  type RuleOptions,
  redisStore,
} from '../../src/index.js';

const MAX = String(Number.MAX_SAFE_INTEGER);
const DURATION_FORMS = "'500ms', '10s', '1m', '1h', '1d'";
const ALGORITHM_LIST = "'fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra'";
const RULE_NAME_RANGE = "1-64 characters of letters, digits, '_', '.', '-'";
const PREFIX_RANGE = '1-64 characters of letters, digits and _ . : @ / + = ~ -';

/** A valid rule with some fields replaced (or removed, when given as undefined). */
function rule(fields: Record<string, unknown> = {}): RuleOptions {
  const base: Record<string, unknown> = { algorithm: 'fixed-window', limit: 10, window: 1000 };
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) delete base[key];
    else base[key] = value;
  }
  return base as unknown as RuleOptions;
}

/** `count` distinct valid rules. */
const manyRules = (count: number): RuleOptions[] =>
  Array.from({ length: count }, (_, i) => ({
    name: `r${i}`,
    algorithm: 'fixed-window',
    limit: 10,
    window: 1000,
  }));

const limiterWith = (options: Record<string, unknown>) => () =>
  createLimiter({ rules: rule(), ...options } as unknown as LimiterOptions);
const ruleWith = (fields: Record<string, unknown>) => () => createLimiter({ rules: rule(fields) });

type Case = [
  label: string,
  run: () => unknown,
  error: typeof TypeError | typeof RangeError,
  fragments: string[],
];

const CASES: Case[] = [
  // limit: positive safe integers
  ['limit 1.5', ruleWith({ limit: 1.5 }), RangeError, ['rules.limit', '1.5', `an integer from 1 to ${MAX}`]],
  ['limit 0', ruleWith({ limit: 0 }), RangeError, ['rules.limit', ': 0 ', `from 1 to ${MAX}`]],
  ['limit -3', ruleWith({ limit: -3 }), RangeError, ['rules.limit', '-3', `from 1 to ${MAX}`]],
  ['limit NaN', ruleWith({ limit: Number.NaN }), RangeError, ['rules.limit', 'NaN', `from 1 to ${MAX}`]],
  [
    'limit Infinity',
    ruleWith({ limit: Infinity }),
    RangeError,
    ['rules.limit', 'Infinity', `from 1 to ${MAX}`],
  ],
  ['limit "10"', ruleWith({ limit: '10' }), RangeError, ['rules.limit', '"10"', `from 1 to ${MAX}`]],
  ['limit missing', ruleWith({ limit: undefined }), RangeError, ['rules.limit', 'undefined', 'from 1 to']],
  [
    'limit 2^53',
    ruleWith({ limit: 2 ** 53 }),
    RangeError,
    ['rules.limit', '9007199254740992', `from 1 to ${MAX}`],
  ],
  [
    'sliding-log limit above its cap',
    ruleWith({ algorithm: 'sliding-log', limit: 100_001 }),
    RangeError,
    ['rules.limit', '100001', 'from 1 to 100000'],
  ],
  [
    'limit × window beyond exact arithmetic',
    ruleWith({ algorithm: 'token-bucket', limit: 1e9, window: '1d' }),
    RangeError,
    ['rules', '1000000000 × 86400000 ms', 'at most 2^51'],
  ],
  // rule count: one check must fit in one atomic store call
  [
    '1,001 rules',
    () => createLimiter({ rules: manyRules(1001) }),
    RangeError,
    ['rules: 1001 rules given', 'at most 1000 rules'],
  ],
  [
    '1,001 rules in a plan',
    () => createLimiter({ plans: { free: rule(), pro: manyRules(1001) }, defaultPlan: 'free' }),
    RangeError,
    ['plans.pro: 1001 rules given', 'at most 1000 rules'],
  ],
  // window: whole milliseconds >= 1, or a duration string
  ['window 0', ruleWith({ window: 0 }), RangeError, ['rules.window', ': 0 ', `>= 1 and at most ${MAX}`]],
  ['window -5', ruleWith({ window: -5 }), RangeError, ['rules.window', '-5', '>= 1']],
  ['window NaN', ruleWith({ window: Number.NaN }), RangeError, ['rules.window', 'NaN', '>= 1']],
  [
    'window Infinity',
    ruleWith({ window: Infinity }),
    RangeError,
    ['rules.window', 'Infinity', `at most ${MAX}`],
  ],
  [
    'window 1.5',
    ruleWith({ window: 1.5 }),
    RangeError,
    ['rules.window', '1.5', 'whole number of milliseconds'],
  ],
  ["window '0s'", ruleWith({ window: '0s' }), RangeError, ['rules.window', '"0s"', '>= 1']],
  ["window '1.5ms'", ruleWith({ window: '1.5ms' }), RangeError, ['rules.window', '"1.5ms"', 'whole number']],
  ["window '-1s'", ruleWith({ window: '-1s' }), RangeError, ['rules.window', '"-1s"', DURATION_FORMS]],
  ["window 'abc'", ruleWith({ window: 'abc' }), RangeError, ['rules.window', '"abc"', DURATION_FORMS]],
  ["window '10x'", ruleWith({ window: '10x' }), RangeError, ['rules.window', '"10x"', DURATION_FORMS]],
  ["window ''", ruleWith({ window: '' }), RangeError, ['rules.window', '""', DURATION_FORMS]],
  [
    "window '1e400s'",
    ruleWith({ window: '1e400s' }),
    RangeError,
    ['rules.window', '"1e400s"', DURATION_FORMS],
  ],
  [
    'window beyond safe integers',
    ruleWith({ window: '99999999999999999d' }),
    RangeError,
    ['rules.window', '"99999999999999999d"', `at most ${MAX}`],
  ],
  ['window {}', ruleWith({ window: {} }), TypeError, ['rules.window', 'object', "'10s'"]],
  ['window missing', ruleWith({ window: undefined }), TypeError, ['rules.window', 'undefined', "'10s'"]],
  // algorithm
  [
    'unknown algorithm',
    ruleWith({ algorithm: 'leaky-bucket' }),
    RangeError,
    ['rules.algorithm', '"leaky-bucket"', ALGORITHM_LIST],
  ],
  [
    'algorithm toString',
    ruleWith({ algorithm: 'toString' }),
    RangeError,
    ['rules.algorithm', '"toString"', ALGORITHM_LIST],
  ],
  [
    'algorithm missing',
    ruleWith({ algorithm: undefined }),
    RangeError,
    ['rules.algorithm', 'undefined', ALGORITHM_LIST],
  ],
  // burst
  ...(['fixed-window', 'sliding-window', 'sliding-log'] as const).map(
    (algorithm): Case => [
      `burst on ${algorithm}`,
      ruleWith({ algorithm, burst: 5 }),
      TypeError,
      ['rules.burst', ': 5 ', `'${algorithm}' has no burst`, "only 'token-bucket' and 'gcra'"],
    ],
  ),
  [
    'burst 0',
    ruleWith({ algorithm: 'token-bucket', burst: 0 }),
    RangeError,
    ['rules.burst', ': 0 ', `from 1 to ${MAX}`],
  ],
  [
    'burst 1.5',
    ruleWith({ algorithm: 'gcra', burst: 1.5 }),
    RangeError,
    ['rules.burst', '1.5', `from 1 to ${MAX}`],
  ],
  [
    'burst null',
    ruleWith({ algorithm: 'gcra', burst: null }),
    RangeError,
    ['rules.burst', 'null', 'from 1 to'],
  ],
  // names and rule lists
  [
    'duplicate rule names',
    () => createLimiter({ rules: [rule({ name: 'a' }), rule({ name: 'a', limit: 5 })] }),
    RangeError,
    ['rules', 'duplicate rule name "a"', 'distinct'],
  ],
  [
    'duplicate default names',
    () => createLimiter({ rules: [rule(), rule()] }),
    RangeError,
    ['rules', '"fixed-window-10-per-1s"', 'distinct'],
  ],
  ["rule name 'a b'", ruleWith({ name: 'a b' }), RangeError, ['rules.name', '"a b"', RULE_NAME_RANGE]],
  ["rule name ''", ruleWith({ name: '' }), RangeError, ['rules.name', '""', RULE_NAME_RANGE]],
  [
    'rule name 65 chars',
    ruleWith({ name: 'n'.repeat(65) }),
    RangeError,
    ['rules.name', 'n'.repeat(65), RULE_NAME_RANGE],
  ],
  [
    'index in a rule list',
    () => createLimiter({ rules: [rule(), rule({ name: 'b', limit: 0 })] }),
    RangeError,
    ['rules[1].limit', ': 0 '],
  ],
  ['rules []', () => createLimiter({ rules: [] }), TypeError, ['rules', 'at least one rule']],
  ['rules missing', limiterWith({ rules: undefined }), TypeError, ['rules or plans is required']],
  [
    'rule null',
    () => createLimiter({ rules: [null as unknown as RuleOptions] }),
    TypeError,
    ['rules[0]', 'null', '{ algorithm, limit, window }'],
  ],
  [
    'options missing',
    () => createLimiter(undefined as unknown as LimiterOptions),
    TypeError,
    ['createLimiter', 'undefined'],
  ],
  // prefix
  [
    "prefix 'a{b}'",
    limiterWith({ prefix: 'a{b}' }),
    RangeError,
    ['prefix', '"a{b}"', PREFIX_RANGE, 'no braces'],
  ],
  ["prefix '{'", limiterWith({ prefix: '{' }), RangeError, ['prefix', '"{"', PREFIX_RANGE]],
  ["prefix '}{'", limiterWith({ prefix: '}{' }), RangeError, ['prefix', '"}{"', PREFIX_RANGE]],
  ["prefix ''", limiterWith({ prefix: '' }), RangeError, ['prefix', '""', PREFIX_RANGE]],
  ["prefix 'a b'", limiterWith({ prefix: 'a b' }), RangeError, ['prefix', '"a b"', PREFIX_RANGE]],
  ['prefix 5', limiterWith({ prefix: 5 }), RangeError, ['prefix', ': 5 ', PREFIX_RANGE]],
  // counts: 'requests' or 'cost'
  [
    "counts 'tokens'",
    ruleWith({ counts: 'tokens' }),
    RangeError,
    ['rules.counts', '"tokens"', "must be 'requests' or 'cost'"],
  ],
  ['counts 1', ruleWith({ counts: 1 }), RangeError, ['rules.counts', ': 1 ', "'requests' or 'cost'"]],
  [
    "counts 'requests' with quotaLease",
    ruleWith({ counts: 'requests', quotaLease: true }),
    TypeError,
    ['rules.quotaLease', "not allowed with counts: 'requests'"],
  ],
  [
    "plan rule counts 'request'",
    () => createLimiter({ plans: { free: [rule(), rule({ name: 'rpm', counts: 'request' })] } }),
    RangeError,
    ['plans.free[1].counts', '"request"', "'requests' or 'cost'"],
  ],
  // unknown options
  [
    'createLimiter typo',
    limiterWith({ prefx: 'x' }),
    TypeError,
    ["unknown option 'prefx'", 'rules, plans, defaultPlan, store, prefix'],
  ],
  [
    'rule typo',
    ruleWith({ limt: 5 }),
    TypeError,
    ['rules.limt', 'unknown option', 'name, algorithm, limit, window, burst'],
  ],
  [
    'memoryStore typo',
    () => memoryStore({ maxkeys: 5 } as never),
    TypeError,
    ['memoryStore', "'maxkeys'", 'maxKeys, clock'],
  ],
  [
    'redisStore typo',
    () => redisStore({ client: { evalsha() {}, eval() {} }, clok: () => 0 } as never),
    TypeError,
    ['redisStore', "'clok'", 'client, clock'],
  ],
  // stores and clients
  [
    'store {}',
    limiterWith({ store: {} }),
    TypeError,
    ['store', 'object', 'memoryStore(), redisStore({ client })'],
  ],
  ["store 'redis'", limiterWith({ store: 'redis' }), TypeError, ['store', '"redis"', 'memoryStore()']],
  [
    'redisStore()',
    () => redisStore(undefined as never),
    TypeError,
    ['redisStore', 'undefined', '{ client }'],
  ],
  [
    'redisStore without client',
    () => redisStore({} as never),
    TypeError,
    ['redisStore client', 'undefined', 'ioredis'],
  ],
  [
    'redisStore client {}',
    () => redisStore({ client: {} as never }),
    TypeError,
    ['redisStore client', 'object', 'node-redis'],
  ],
  [
    'redisStore client URL',
    () => redisStore({ client: 'redis://x' as never }),
    TypeError,
    ['redisStore client', '"redis://x"', 'evalSha'],
  ],
  [
    'redisStore clock 5',
    () => redisStore({ client: { evalsha() {}, eval() {} } as never, clock: 5 as never }),
    TypeError,
    ['redisStore clock', 'got 5', 'a function'],
  ],
  [
    'memoryStore maxKeys 0',
    () => memoryStore({ maxKeys: 0 }),
    RangeError,
    ['memoryStore maxKeys', ': 0 ', '>= 1'],
  ],
  [
    'memoryStore maxKeys 1.5',
    () => memoryStore({ maxKeys: 1.5 }),
    RangeError,
    ['memoryStore maxKeys', '1.5', 'integer >= 1'],
  ],
  [
    'memoryStore clock 1',
    () => memoryStore({ clock: 1 as never }),
    TypeError,
    ['memoryStore clock', 'got 1', 'a function'],
  ],
];

describe('invalid options fail at creation, naming option, value and allowed range', () => {
  it.each(CASES)('%s', (_label, run, error, fragments) => {
    let thrown: unknown;
    try {
      run();
    } catch (caught) {
      thrown = caught;
    }
    expect(thrown).toBeInstanceOf(error);
    const message = (thrown as Error).message;
    for (const fragment of fragments) expect(message).toContain(fragment);
  });
});

describe('invalid per-request input fails at check, peek and reset', () => {
  const limiter = createLimiter({ rules: rule() });

  it.each([
    ['cost 0', { cost: 0 }, '0'],
    ['cost -1', { cost: -1 }, '-1'],
    ['cost 1.5', { cost: 1.5 }, '1.5'],
    ['cost NaN', { cost: Number.NaN }, 'NaN'],
    ['cost Infinity', { cost: Infinity }, 'Infinity'],
    ["cost '2'", { cost: '2' }, '"2"'],
  ])('%s', async (_label, options, value) => {
    for (const ask of [limiter.check, limiter.peek]) {
      await expect(ask('key', options as never)).rejects.toThrow(RangeError);
      await expect(ask('key', options as never)).rejects.toThrow(
        `cost: ${value} must be an integer from 1 to ${MAX}`,
      );
    }
  });

  it('takes a rule set at the bound of 1,000 rules, and refuses an override past it when set', async () => {
    expect(createLimiter({ rules: manyRules(1000) }).rules).toHaveLength(1000);
    await expect(limiter.setOverride('big', manyRules(1001))).rejects.toThrow(
      'override: 1001 rules given; at most 1000 rules can be evaluated in one atomic store call',
    );
  });

  it('regression: check silently ignored a misspelt cost option and charged 1', async () => {
    await expect(limiter.check('typo', { cots: 5 } as never)).rejects.toThrow(
      "check options: unknown option 'cots'; the options are cost, plan",
    );
    await expect(limiter.peek('typo', 5 as never)).rejects.toThrow(
      'check options: expected { cost?, plan? }, got 5',
    );
    expect((await limiter.peek('typo')).remaining).toBe(9);
  });

  it('a cost above the capacity is a denial that says so, not an error', async () => {
    const decision = await limiter.check('big', { cost: 11 });
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: Number.POSITIVE_INFINITY, remaining: 10 });
  });

  it.each([
    ['an empty key', '', '""'],
    ['a number', 5, '5'],
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['an object', {}, 'an? object'],
  ])('rejects %s as key', async (_label, key, value) => {
    for (const ask of [limiter.check, limiter.peek, limiter.reset]) {
      await expect(ask(key as never)).rejects.toThrow(TypeError);
      await expect(ask(key as never)).rejects.toThrow(
        new RegExp(`^key: expected a non-empty string, got ${value}$`),
      );
    }
  });

  it('regression: memoryStore silently ignored a misspelt maxKeys (and with it the memory bound)', () => {
    expect(() => memoryStore({ maxkeys: 10 } as never)).toThrow("memoryStore: unknown option 'maxkeys'");
  });

  it("regression: a burst on an algorithm without one was reported without the burst's value", () => {
    expect(ruleWith({ algorithm: 'sliding-log', burst: 7 })).toThrow('rules.burst: 7 is not allowed');
  });
});

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5s', 1500],
    ['2 m', 120_000],
    [' 3h ', 10_800_000],
    [250, 250],
    [1, 1],
  ] as const)('%j is %d ms', (value, ms) => {
    expect(parseDuration(value, 'window')).toBe(ms);
  });

  it('takes 0 only where zero is allowed', () => {
    expect(parseDuration(0, 'timeout', true)).toBe(0);
    expect(parseDuration('0ms', 'timeout', true)).toBe(0);
    expect(() => parseDuration(0, 'window')).toThrow('window: 0 must be a whole number of milliseconds >= 1');
  });

  it.each([
    [
      '10x',
      RangeError,
      `"10x" is not a duration; use a number of milliseconds or a string such as ${DURATION_FORMS}`,
    ],
    ['1.5ms', RangeError, '"1.5ms" must be a whole number of milliseconds >= 1'],
    ['-1s', RangeError, '"-1s" is not a duration'],
    ['s', RangeError, '"s" is not a duration'],
    [Number.NaN, RangeError, 'NaN must be a whole number of milliseconds'],
    [-1, RangeError, '-1 must be a whole number of milliseconds >= 1'],
    [2 ** 53, RangeError, `at most ${MAX}`],
    [null, TypeError, "expected a duration (milliseconds or a string such as '10s'), got null"],
    [10n, TypeError, 'got 10n'],
  ] as const)('rejects %s', (value, error, message) => {
    expect(() => parseDuration(value, 'opt')).toThrow(error);
    expect(() => parseDuration(value, 'opt')).toThrow(/^opt: /);
    expect(() => parseDuration(value, 'opt')).toThrow(message);
  });
});
