/**
 * Property tests: random request sequences (time steps of 0, within a window and across several
 * windows; costs from 1 to capacity + 1) replayed through a limiter on the memory store with a
 * fake clock, every decision compared with the brute-force references of reference.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  type Decision,
  type Limiter,
  memoryStore,
  type RuleDecision,
  type RuleOptions,
} from '../../src/index.js';
import { ALGORITHMS, type Rule, ruleSetArb, type Scenario, scenarioArb, singleRule } from './arbitraries.js';
import { type Admitted, type RateAlgorithm, REFERENCES } from './reference.js';

const RUNS = 120;

/** Creates a limiter on a memory store whose clock the caller moves. */
function fakeClockLimiter(rules: RuleOptions[]) {
  const clock = { now: 0 };
  const limiter = createLimiter({ store: memoryStore({ clock: () => clock.now }), rules });
  return { clock, limiter };
}

/** Every rule allows `cost` at `at`, by the references. */
function allAllow(rules: Rule[], history: Admitted[], at: number, cost: number): boolean {
  return rules.every((rule) =>
    REFERENCES[rule.options.algorithm as RateAlgorithm].allows(history, at, cost, rule.params),
  );
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
  const reference = REFERENCES[rule.options.algorithm as RateAlgorithm];
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
 * Replays a scenario, checking every decision against the references. Returns the history
 * admitted since the last reset so callers can check invariants over it.
 */
async function replayAgainstReferences({ rules, start, steps }: Scenario): Promise<Admitted[]> {
  const { clock, limiter } = fakeClockLimiter(rules.map((rule) => rule.options));
  let history: Admitted[] = [];
  clock.now = start;
  for (const { delta, cost, op } of steps) {
    clock.now += delta;
    const at = clock.now;
    if (op === 'reset') {
      await limiter.reset('key');
      history = [];
      continue;
    }
    const decision =
      op === 'peek' ? await limiter.peek('key', { cost }) : await limiter.check('key', { cost });
    const allowed = allAllow(rules, history, at, cost);
    const where = `${op} at ${at} cost ${cost}`;
    expect(decision.allowed, where).toBe(allowed);
    // Decisions show the state after the request, for a peek as if it had been consumed.
    const after = allowed ? [...history, { at, cost }] : history;
    rules.forEach((rule, i) => {
      expectRuleView(decision.rules[i] as RuleDecision, rule, history, after, at, cost);
    });
    const binding = decision.rules[bindingIndex(decision.rules, allowed)];
    expect(decision, where).toEqual({
      ...binding,
      allowed,
      rules: decision.rules,
      degraded: false,
      shadowDenied: [],
    });
    const capacity = Math.min(...rules.map((rule) => rule.params.capacity));
    expect(decision.retryAfterMs === Number.POSITIVE_INFINITY, where).toBe(cost > capacity);
    if (!allowed && Number.isFinite(decision.retryAfterMs)) {
      expect(allAllow(rules, history, at + decision.retryAfterMs, cost), where).toBe(true);
      expect(allAllow(rules, history, at + decision.retryAfterMs - 1, cost), where).toBe(false);
    }
    // A denial (or a peek) consumed nothing: asking again at the same moment gives the same answer.
    if (!allowed || op === 'peek') expect(await limiter.peek('key', { cost }), where).toEqual(decision);
    if (op === 'check') history = after;
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
      fc.asyncProperty(singleRule('sliding-log'), async (generated) => {
        // Without resets, so the whole history is one log.
        const steps = generated.steps.map((step) => ({
          ...step,
          op: step.op === 'reset' ? 'check' : step.op,
        }));
        const scenario = { ...generated, steps };
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
  it('are all or nothing, each rule exact, the binding rule reported', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb(ruleSetArb()), async (scenario) => {
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
        for (const { delta, cost, op } of steps) {
          now += delta;
          bucket.clock.now = now;
          cell.clock.now = now;
          if (op === 'reset') {
            await Promise.all([bucket.limiter.reset('key'), cell.limiter.reset('key')]);
            continue;
          }
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
