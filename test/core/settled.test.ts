/** settledDecision: a checked decision as its settle or refund will leave it, what settled headers show. */
import { afterEach, describe, expect, it } from 'vitest';
import { attachTicket, type RuleDecision, withRules } from '../../src/core/decision.js';
import { settledDecision } from '../../src/core/settled.js';
import { createLimiter, type Limiter, type RuleOptions } from '../../src/index.js';
import { resolveRules } from '../../src/rules.js';

const rpm: RuleOptions = {
  name: 'rpm',
  algorithm: 'fixed-window',
  counts: 'requests',
  limit: 60,
  window: '1m',
};
const tpm: RuleOptions = { name: 'tpm', algorithm: 'fixed-window', limit: 90000, window: '1m' };

let limiter: Limiter | undefined;
afterEach(async () => {
  await limiter?.close();
  limiter = undefined;
});

function memory(rules: RuleOptions[]): Limiter {
  limiter = createLimiter({ rules });
  return limiter;
}

/** Each rule's name and remaining, and the binding rule's. */
function shown(decision: { rule: string; remaining: number; rules: RuleDecision[] } | undefined) {
  if (decision === undefined) return undefined;
  return {
    binding: [decision.rule, decision.remaining],
    rules: decision.rules.map((view) => [view.rule, view.remaining]),
  };
}

describe('settledDecision, RPM + TPM (a requests rule and a cost rule)', () => {
  it('a refund gives each rule its own units back: 1 request, 800 tokens', async () => {
    const decision = await memory([rpm, tpm]).check('k', { cost: 800 });
    expect(shown(decision)).toEqual({
      binding: ['rpm', 59],
      rules: [
        ['rpm', 59],
        ['tpm', 89200],
      ],
    });
    const settled = settledDecision(decision, { refund: true });
    expect(shown(settled)).toEqual({
      binding: ['rpm', 60],
      rules: [
        ['rpm', 60],
        ['tpm', 90000],
      ],
    });
    // Everything but remaining is the check's, reset times included.
    expect(settled?.rules.map((view) => view.resetMs)).toEqual(decision.rules.map((view) => view.resetMs));
    expect(settled?.allowed).toBe(true);
    expect(settled?.limit).toBe(60);
  });

  it('a settle changes only the cost rule, by actual − reserved; the binding rule is chosen again', async () => {
    const decision = await memory([rpm, tpm]).check('k', { cost: 800 });
    expect(shown(settledDecision(decision, { actual: 2000 }))).toEqual({
      binding: ['rpm', 59],
      rules: [
        ['rpm', 59],
        ['tpm', 88000],
      ],
    });
    expect(shown(settledDecision(decision, { actual: 300 }))).toEqual({
      binding: ['rpm', 59],
      rules: [
        ['rpm', 59],
        ['tpm', 89700],
      ],
    });
    // Debt shows as 0 left, which now binds.
    const settled = settledDecision(decision, { actual: 200000 });
    expect(shown(settled)).toEqual({
      binding: ['tpm', 0],
      rules: [
        ['rpm', 59],
        ['tpm', 0],
      ],
    });
    expect(settled?.limit).toBe(90000);
  });

  it('changes nothing (undefined) when the actual cost is the reservation, for a denial or a peek', async () => {
    const checker = memory([{ name: 'one', algorithm: 'fixed-window', limit: 1, window: '1m' }]);
    const allowed = await checker.check('k', { cost: 1 });
    expect(settledDecision(allowed, { actual: 1 })).toBeUndefined();
    expect(settledDecision(await checker.check('k'), { refund: true })).toBeUndefined();
    expect(settledDecision(await checker.peek('j'), { refund: true })).toBeUndefined();
    expect(settledDecision({ ...allowed }, { refund: true })).toBeUndefined();
  });

  it('leaves concurrency rules as they were, and never binds a shadow rule', async () => {
    const decision = await memory([
      { name: 'inflight', algorithm: 'concurrency', limit: 4 },
      { name: 'minute', algorithm: 'fixed-window', limit: 10, window: '1m' },
      { name: 'watch', algorithm: 'fixed-window', limit: 2, window: '1m', shadow: true },
    ]).check('k', { cost: 2 });
    expect(shown(decision)).toEqual({
      binding: ['inflight', 2],
      rules: [
        ['inflight', 2],
        ['minute', 8],
        ['watch', 0],
      ],
    });
    expect(shown(settledDecision(decision, { refund: true }))).toEqual({
      binding: ['inflight', 2],
      rules: [
        ['inflight', 2],
        ['minute', 10],
        ['watch', 2],
      ],
    });
  });
});

describe('settledDecision bounds', () => {
  it('a refund is capped at the rule limit', () => {
    const rules = resolveRules([{ name: 'minute', algorithm: 'fixed-window', limit: 100, window: '1m' }]);
    const view: RuleDecision = {
      rule: 'minute',
      allowed: true,
      limit: 100,
      windowMs: 60_000,
      remaining: 98,
      resetMs: 60_000,
      retryAfterMs: 0,
    };
    const decision = withRules(view, true, [view], false);
    attachTicket(decision, { head: 'k', rules, reserved: 5, outcomes: [], where: 'store', released: false });
    expect(shown(settledDecision(decision, { refund: true }))).toEqual({
      binding: ['minute', 100],
      rules: [['minute', 100]],
    });
  });
});
