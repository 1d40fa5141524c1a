/**
 * fast-check generators shared by the property tests: random rules and random request
 * sequences whose time steps are sized to the rules' windows.
 */
import fc from 'fast-check';
import type { AlgorithmName, RuleOptions } from '../../src/index.js';
import type { Params } from './reference.js';

export const BASE_TIME = 1_700_006_400_000;
export const ALGORITHMS: AlgorithmName[] = [
  'fixed-window',
  'sliding-log',
  'sliding-window',
  'token-bucket',
  'gcra',
];

export interface Rule {
  options: RuleOptions;
  params: Params;
}

export interface Step {
  /** Milliseconds after the previous step. */
  delta: number;
  cost: number;
  /** `check` consumes, `peek` only asks, `reset` forgets the key. */
  op: 'check' | 'peek' | 'reset';
}

export interface Scenario {
  rules: Rule[];
  start: number;
  steps: Step[];
}

export const windowArb = fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 13, max: 2000 }));

export function ruleArb(
  algorithm: AlgorithmName,
  name: string,
  windows: fc.Arbitrary<number> = windowArb,
): fc.Arbitrary<Rule> {
  const hasBurst = algorithm === 'token-bucket' || algorithm === 'gcra';
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 8 }),
      windowMs: windows,
      burst: hasBurst
        ? fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined })
        : fc.constant(undefined),
    })
    .map(({ limit, windowMs, burst }) => ({
      options: { name, algorithm, limit, window: windowMs, ...(burst === undefined ? {} : { burst }) },
      params: { limit, windowMs, capacity: burst ?? limit },
    }));
}

/** Two or three rules of random algorithms, named r0, r1, r2. */
export function ruleSetArb(windows: fc.Arbitrary<number> = windowArb): fc.Arbitrary<Rule[]> {
  return fc
    .array(fc.constantFrom(...ALGORITHMS), { minLength: 2, maxLength: 3 })
    .chain((algorithms) =>
      fc.tuple(...algorithms.map((algorithm, i) => ruleArb(algorithm, `r${i}`, windows))),
    );
}

/**
 * Request sequences sized to the rules: same-millisecond repeats, moves within a window and
 * jumps over several windows; costs from 1 to the largest capacity + 1 (never admissible).
 */
export function scenarioArb(rules: fc.Arbitrary<Rule[]>, maxSteps = 50): fc.Arbitrary<Scenario> {
  return rules.chain((list) => {
    const W = Math.max(...list.map((rule) => rule.params.windowMs));
    const capacity = Math.max(...list.map((rule) => rule.params.capacity));
    const step: fc.Arbitrary<Step> = fc.record({
      delta: fc.oneof(
        { arbitrary: fc.constant(0), weight: 3 },
        { arbitrary: fc.integer({ min: 1, max: W }), weight: 4 },
        { arbitrary: fc.integer({ min: W, max: 3 * W }), weight: 1 },
      ),
      cost: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: capacity + 1 })),
      op: fc.oneof(
        { arbitrary: fc.constant('check' as const), weight: 16 },
        { arbitrary: fc.constant('peek' as const), weight: 3 },
        { arbitrary: fc.constant('reset' as const), weight: 1 },
      ),
    });
    return fc.record({
      rules: fc.constant(list),
      start: fc.integer({ min: 0, max: 10_000_000 }).map((offset) => BASE_TIME + offset),
      steps: fc.array(step, { minLength: 1, maxLength: maxSteps }),
    });
  });
}

export function singleRule(algorithm: AlgorithmName): fc.Arbitrary<Scenario> {
  return scenarioArb(ruleArb(algorithm, 'r').map((rule) => [rule]));
}
