/**
 * Runs the specification table against any store. A store factory receives a clock that the
 * runner moves; the same expectations hold for every store.
 */
import { expect, it } from 'vitest';
import { createLimiter, type Store } from '../../src/index.js';
import { BASE_TIME, SPEC_CASES } from './spec-cases.js';

export type StoreWithClock = (clock: () => number) => Store;

export function runSpecification(makeStore: StoreWithClock, keyPrefix: string): void {
  for (const [index, specCase] of SPEC_CASES.entries()) {
    it(specCase.name, async () => {
      let now = BASE_TIME;
      // The deny cache answers repeated denials locally with the binding rule's numbers only; the
      // table pins every rule's exact view, so it runs against the store alone.
      const limiter = createLimiter({
        store: makeStore(() => now),
        rules: specCase.rules,
        prefix: keyPrefix,
        denyCache: false,
      });
      const key = `case-${index}`;
      for (const [stepIndex, step] of specCase.steps.entries()) {
        now = BASE_TIME + step.at;
        const options = { cost: step.cost ?? 1 };
        const decision =
          step.op === 'peek' ? await limiter.peek(key, options) : await limiter.check(key, options);
        const where = `step ${stepIndex} (t=${step.at}, cost=${options.cost}, ${step.op ?? 'check'})`;
        expect(
          {
            allowed: decision.allowed,
            remaining: decision.remaining,
            resetMs: decision.resetMs,
            retryAfterMs: decision.retryAfterMs,
          },
          where,
        ).toEqual({
          allowed: step.expect.allowed,
          remaining: step.expect.remaining,
          resetMs: step.expect.resetMs,
          retryAfterMs: step.expect.retryAfterMs,
        });
        if (step.expect.rule !== undefined) expect(decision.rule, where).toBe(step.expect.rule);
        for (const [name, expected] of Object.entries(step.rules ?? {})) {
          const view = decision.rules.find((rule) => rule.rule === name);
          expect(view, `${where} rule ${name}`).toMatchObject(expected);
        }
      }
    });
  }
}
