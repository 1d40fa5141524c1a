/**
 * Property tests: random request sequences (time steps of 0, within a window and across several
 * windows; costs from 1 to capacity + 1) replayed through a limiter on the memory store with a
 * fake clock, every decision compared with the brute-force references of reference.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AlgorithmName,
  createLimiter,
  type Decision,
  type Limiter,
  memoryStore,
  type RuleDecision,
  type RuleOptions,
} from '../../src/index.js';
import { type Admitted, type Params, REFERENCES } from './reference.js';

const BASE_TIME = 1_700_006_400_000;
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra'];
const RUNS = 120;

interface Rule {
  options: RuleOptions;
  params: Params;
}

interface Step {
  delta: number;
  cost: number;
}

interface Scenario {
  rules: Rule[];
  start: number;
  steps: Step[];
}

const windowArb = fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 13, max: 2000 }));

function ruleArb(algorithm: AlgorithmName, name: string): fc.Arbitrary<Rule> {
  const hasBurst = algorithm === 'token-bucket' || algorithm === 'gcra';
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 8 }),
      windowMs: windowArb,
      burst: hasBurst
        ? fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined })
        : fc.constant(undefined),
    })
    .map(({ limit, windowMs, burst }) => ({
      options: { name, algorithm, limit, window: windowMs, ...(burst === undefined ? {} : { burst }) },
      params: { limit, windowMs, capacity: burst ?? limit },
    }));
}

/** Steps sized to the rules: same-millisecond repeats, moves within a window, multi-window jumps. */
function scenarioArb(rules: fc.Arbitrary<Rule[]>, maxSteps = 50): fc.Arbitrary<Scenario> {
  return rules.chain((list) => {
    const W = Math.max(...list.map((rule) => rule.params.windowMs));
    const capacity = Math.max(...list.map((rule) => rule.params.capacity));
    const step = fc.record({
      delta: fc.oneof(
        { arbitrary: fc.constant(0), weight: 3 },
        { arbitrary: fc.integer({ min: 1, max: W }), weight: 4 },
        { arbitrary: fc.integer({ min: W, max: 3 * W }), weight: 1 },
      ),
      cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: capacity + 1 })),
    });
    return fc.record({
      rules: fc.constant(list),
      start: fc.integer({ min: 0, max: 10_000_000 }).map((offset) => BASE_TIME + offset),
      steps: fc.array(step, { minLength: 1, maxLength: maxSteps }),
    });
  });
}

function singleRule(algorithm: AlgorithmName): fc.Arbitrary<Scenario> {
  return scenarioArb(ruleArb(algorithm, 'r').map((rule) => [rule]));
}

/** Creates a limiter on a memory store whose clock the caller moves. */
function fakeClockLimiter(rules: RuleOptions[]) {
  const clock = { now: 0 };
  const limiter = createLimiter({ store: memoryStore({ clock: () => clock.now }), rules });
  return { clock, limiter };
}

/** Every rule allows `cost` at `at`, by the references. */
function allAllow(rules: Rule[], history: Admitted[], at: number, cost: number): boolean {
  return rules.every((rule) => REFERENCES[rule.options.algorithm].allows(history, at, cost, rule.params));
}

/** Checks one rule's view of a decision against its reference; `after` is the history after the decision. */
function expectRuleView(
  view: RuleDecision,
  rule: Rule,
  history: Admitted[],
  after: Admitted[],
  at: number,
  cost: number,
): void {
  const reference = REFERENCES[rule.options.algorithm];
  const { params } = rule;
  const where = `rule ${view.rule} at ${at} cost ${cost}`;
  expect(view.allowed, where).toBe(reference.allows(history, at, cost, params));
  expect(view.limit, where).toBe(params.capacity);
  expect(view.windowMs, where).toBe(params.windowMs);
  expect(Number.isInteger(view.remaining) && view.remaining >= 0, where).toBe(true);
  expect(view.remaining, where).toBe(reference.remaining(after, at, params));
  // resetMs: the first moment, nothing else arriving, when the whole capacity is back.
  expect(reference.remaining(after, at + view.resetMs, params), `${where} reset`).toBe(params.capacity);
  if (view.resetMs > 0) {
    expect(reference.remaining(after, at + view.resetMs - 1, params), `${where} reset`).toBeLessThan(
      params.capacity,
    );
  }
  if (view.allowed) {
    expect(view.retryAfterMs, where).toBe(0);
  } else if (cost > params.capacity) {
    expect(view.retryAfterMs, where).toBe(Number.POSITIVE_INFINITY);
  } else {
    // Exact: the same request is allowed at t + retry and denied at t + retry − 1.
    expect(Number.isInteger(view.retryAfterMs) && view.retryAfterMs >= 1, where).toBe(true);
    expect(reference.allows(history, at + view.retryAfterMs, cost, params), `${where} at +retry`).toBe(true);
    expect(reference.allows(history, at + view.retryAfterMs - 1, cost, params), `${where} at +retry-1`).toBe(
      false,
    );
  }
}

/** The binding rule, restated: the longest wait among denials (first on ties), else the least remaining. */
function bindingIndex(views: RuleDecision[], allowed: boolean): number {
  let best = 0;
  for (let i = 1; i < views.length; i++) {
    const view = views[i] as RuleDecision;
    const current = views[best] as RuleDecision;
    if (allowed ? view.remaining < current.remaining : view.retryAfterMs > current.retryAfterMs) best = i;
  }
  return best;
}

/**
 * Replays a scenario, checking every decision against the references. Returns the admitted
 * history so callers can check invariants over it.
 */
async function replayAgainstReferences({ rules, start, steps }: Scenario): Promise<Admitted[]> {
  const { clock, limiter } = fakeClockLimiter(rules.map((rule) => rule.options));
  const history: Admitted[] = [];
  clock.now = start;
  for (const { delta, cost } of steps) {
    clock.now += delta;
    const at = clock.now;
    const decision = await limiter.check('key', { cost });
    const allowed = allAllow(rules, history, at, cost);
    expect(decision.allowed, `check at ${at} cost ${cost}`).toBe(allowed);
    const after = allowed ? [...history, { at, cost }] : history;
    rules.forEach((rule, i) => {
      expectRuleView(decision.rules[i] as RuleDecision, rule, history, after, at, cost);
    });
    const binding = decision.rules[bindingIndex(decision.rules, allowed)];
    expect(decision).toEqual({ ...binding, allowed, rules: decision.rules });
    const capacity = Math.min(...rules.map((rule) => rule.params.capacity));
    expect(decision.retryAfterMs === Number.POSITIVE_INFINITY).toBe(cost > capacity);
    if (!allowed) {
      if (Number.isFinite(decision.retryAfterMs)) {
        expect(allAllow(rules, history, at + decision.retryAfterMs, cost)).toBe(true);
        expect(allAllow(rules, history, at + decision.retryAfterMs - 1, cost)).toBe(false);
      }
      // A denial consumed nothing: asking again at the same moment gives the same answer.
      expect(await limiter.peek('key', { cost })).toEqual(decision);
    }
    history.push(...after.slice(history.length));
  }
  return history;
}

describe.each(ALGORITHMS)('%s matches its brute-force reference', (algorithm) => {
  it('on random sequences: allowed, remaining, resetMs and exact retryAfterMs', async () => {
    await fc.assert(
      fc.asyncProperty(singleRule(algorithm), async (scenario) => {
        await replayAgainstReferences(scenario);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('sliding-log', () => {
  it('never holds more than limit in any half-open interval [s, s + W)', async () => {
    await fc.assert(
      fc.asyncProperty(singleRule('sliding-log'), async (scenario) => {
        const history = await replayAgainstReferences(scenario);
        const { limit, windowMs } = (scenario.rules[0] as Rule).params;
        // The heaviest interval starts at an admitted request, so those starts suffice.
        for (const { at: s } of history) {
          let total = 0;
          for (const { at, cost } of history) if (at >= s && at < s + windowMs) total += cost;
          expect(total, `interval [${s}, ${s + windowMs})`).toBeLessThanOrEqual(limit);
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('several rules', () => {
  const rulesArb = fc
    .array(fc.constantFrom(...ALGORITHMS), { minLength: 2, maxLength: 3 })
    .chain((algorithms) => fc.tuple(...algorithms.map((algorithm, i) => ruleArb(algorithm, `r${i}`))));

  it('are all or nothing, each rule exact, the binding rule reported', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb(rulesArb), async (scenario) => {
        await replayAgainstReferences(scenario);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('gcra', () => {
  it('gives exactly the decisions of token-bucket (every field) with the same parameters', async () => {
    await fc.assert(
      fc.asyncProperty(singleRule('gcra'), async ({ rules, start, steps }) => {
        const options = (rules[0] as Rule).options;
        const bucket = fakeClockLimiter([{ ...options, algorithm: 'token-bucket' }]);
        const cell = fakeClockLimiter([options]);
        let now = start;
        for (const { delta, cost } of steps) {
          now += delta;
          bucket.clock.now = now;
          cell.clock.now = now;
          const peeked = await sameDecision(bucket.limiter, cell.limiter, (limiter) =>
            limiter.peek('key', { cost }),
          );
          const checked = await sameDecision(bucket.limiter, cell.limiter, (limiter) =>
            limiter.check('key', { cost }),
          );
          expect(checked.allowed).toBe(peeked.allowed);
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });
});

async function sameDecision(
  bucket: Limiter,
  cell: Limiter,
  ask: (limiter: Limiter) => Promise<Decision>,
): Promise<Decision> {
  const expected = await ask(bucket);
  expect(await ask(cell)).toEqual(expected);
  return expected;
}
