/**
 * Runs the specification table against any store. A store factory receives a clock that the
 * runner moves; the same expectations hold for every store.
 */
import { expect, it } from 'vitest';
import { createLimiter, type Decision, type Store } from '../../src/index.js';
import { ABUSE_CASES } from './abuse-cases.js';
import { CALENDAR_CASES } from './calendar-cases.js';
import { COUNTS_CASES } from './counts-cases.js';
import { BASE_TIME, SPEC_CASES } from './spec-cases.js';
import { TENANT_CASES } from './tenant-cases.js';

export type StoreWithClock = (clock: () => number) => Store;

export function runSpecification(makeStore: StoreWithClock, keyPrefix: string): void {
  for (const [index, specCase] of [
    ...SPEC_CASES,
    ...TENANT_CASES,
    ...ABUSE_CASES,
    ...COUNTS_CASES,
    ...CALENDAR_CASES,
  ].entries()) {
    it(specCase.name, async () => {
      const base = specCase.base ?? BASE_TIME;
      let now = base;
      // The deny cache answers repeated denials locally with the binding rule's numbers only; the
      // table pins every rule's exact view, so it runs against the store alone. The deadline is
      // generous: a loaded machine must not turn a slow answer into a fail-open decision here.
      const limiter = createLimiter({
        store: makeStore(() => now),
        ...(specCase.plans === undefined
          ? { rules: specCase.rules }
          : { plans: specCase.plans, defaultPlan: specCase.defaultPlan }),
        prefix: keyPrefix,
        denyCache: false,
        timeout: '5s',
        ...(specCase.shadow === undefined ? {} : { shadow: specCase.shadow }),
      });
      const key = `case-${index}`;
      const decisions: Decision[] = [];
      for (const [stepIndex, step] of specCase.steps.entries()) {
        now = base + step.at;
        if (step.op === 'reset') {
          await limiter.reset(key);
          continue;
        }
        if (step.op === 'release' || step.op === 'renew') {
          const held = decisions[step.of ?? -1];
          if (held === undefined) throw new Error(`step ${stepIndex}: ${step.op} of no earlier decision`);
          if (step.op === 'release') await limiter.release(held);
          else expect(await limiter.renew(held), `step ${stepIndex} renew`).toBe(step.renews);
          continue;
        }
        if (step.op === 'settle' || step.op === 'refund') {
          const settled = decisions[step.settles ?? -1];
          if (settled === undefined) throw new Error(`step ${stepIndex}: settles no earlier decision`);
          if (step.op === 'refund') await limiter.refund(settled);
          else await limiter.settle(settled, step.actual ?? 0);
          continue;
        }
        const options = { cost: step.cost ?? 1, ...(step.plan === undefined ? {} : { plan: step.plan }) };
        const decision =
          step.op === 'peek' ? await limiter.peek(key, options) : await limiter.check(key, options);
        decisions[stepIndex] = decision;
        const where = `step ${stepIndex} (t=${step.at}, cost=${options.cost}, ${step.op ?? 'check'})`;
        const expected = step.expect;
        if (expected === undefined) throw new Error(`${where}: a check or peek needs an expectation`);
        expect(
          {
            allowed: decision.allowed,
            remaining: decision.remaining,
            resetMs: decision.resetMs,
            retryAfterMs: decision.retryAfterMs,
          },
          where,
        ).toEqual({
          allowed: expected.allowed,
          remaining: expected.remaining,
          resetMs: expected.resetMs,
          retryAfterMs: expected.retryAfterMs,
        });
        if (expected.rule !== undefined) expect(decision.rule, where).toBe(expected.rule);
        if (expected.shadowDenied !== undefined)
          expect(decision.shadowDenied, where).toEqual(expected.shadowDenied);
        if (expected.blocked !== undefined) expect(decision.blocked === true, where).toBe(expected.blocked);
        if (specCase.plans !== undefined)
          expect(decision.plan, where).toBe(options.plan ?? specCase.defaultPlan);
        for (const [name, expectedView] of Object.entries(step.rules ?? {})) {
          const view = decision.rules.find((rule) => rule.rule === name);
          expect(view, `${where} rule ${name}`).toMatchObject(expectedView);
        }
      }
    });
  }
}
