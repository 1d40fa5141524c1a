/**
 * Specification cases for rules that count requests (`counts: 'requests'`) beside rules that
 * count cost: one check takes 1 from the first and its cost from the second, all or nothing.
 * Run by every store with the rest of the table (see run-spec.ts).
 */
import type { AlgorithmName, RuleOptions } from '../../src/index.js';
import { no, ok, type SpecCase, type Step } from './spec-cases.js';

const MINUTE = 60_000;
const NEVER = Number.POSITIVE_INFINITY;

const settle = (at: number, settles: number, actual: number): Step => ({ at, op: 'settle', settles, actual });

const rpm = (limit: number, algorithm: AlgorithmName = 'fixed-window'): RuleOptions => ({
  name: 'rpm',
  algorithm,
  counts: 'requests',
  limit,
  window: MINUTE,
});
const tpm = (limit: number): RuleOptions => ({
  name: 'tpm',
  algorithm: 'fixed-window',
  limit,
  window: MINUTE,
});

/** A requests rule of `algorithm` beside a cost rule; every number here is the same for each algorithm. */
function eachAlgorithm(algorithm: Exclude<AlgorithmName, 'concurrency'>): SpecCase {
  return {
    name: `counts: a ${algorithm} rule counting requests takes 1 per check, and no settle`,
    rules: [rpm(200, algorithm), tpm(1000)],
    steps: [
      {
        at: 0,
        cost: 900,
        expect: { ...ok(100, MINUTE), rule: 'tpm' },
        rules: { rpm: { allowed: true, remaining: 199 } },
      },
      {
        at: 0,
        cost: 50,
        expect: { ...ok(50, MINUTE), rule: 'tpm' },
        rules: { rpm: { allowed: true, remaining: 198 } },
      },
      // A charge of 30: tpm only (on rpm, sliding-log would record it as a new entry).
      settle(0, 1, 80),
      {
        at: 0,
        cost: 20,
        expect: { ...ok(0, MINUTE), rule: 'tpm' },
        rules: { rpm: { allowed: true, remaining: 197 } },
      },
      {
        at: 0,
        op: 'peek',
        expect: { ...no(0, MINUTE, MINUTE), rule: 'tpm' },
        rules: { rpm: { allowed: true, remaining: 197 } },
      },
    ],
  };
}

export const COUNTS_CASES: SpecCase[] = [
  {
    name: 'counts: RPM + TPM in one check; the token limit runs out first and binds',
    rules: [rpm(3), tpm(1000)],
    steps: [
      { at: 0, cost: 400, expect: { ...ok(2, MINUTE), rule: 'rpm' }, rules: { tpm: ok(600, MINUTE) } },
      // All or nothing: tpm denies, so rpm's request is not taken either.
      {
        at: 1,
        cost: 700,
        expect: { ...no(600, 59_999, 59_999), rule: 'tpm' },
        rules: { rpm: { allowed: true, remaining: 2 } },
      },
      { at: 2, cost: 600, expect: { ...ok(0, 59_998), rule: 'tpm' }, rules: { rpm: ok(1, 59_998) } },
      {
        at: 3,
        op: 'peek',
        expect: { ...no(0, 59_997, 59_997), rule: 'tpm' },
        rules: { rpm: { allowed: true, remaining: 1 } },
      },
    ],
  },
  {
    name: 'counts: RPM + TPM in one check; the request limit runs out first and binds, whatever the cost',
    rules: [rpm(2), tpm(1000)],
    steps: [
      // A cost above the request rule's limit: it takes 1 there, never "cost exceeds capacity".
      { at: 0, cost: 100, expect: { ...ok(1, MINUTE), rule: 'rpm' }, rules: { tpm: ok(900, MINUTE) } },
      { at: 0, cost: 100, expect: { ...ok(0, MINUTE), rule: 'rpm' }, rules: { tpm: ok(800, MINUTE) } },
      {
        at: 1,
        expect: { ...no(0, 59_999, 59_999), rule: 'rpm' },
        rules: { tpm: { allowed: true, remaining: 800 } },
      },
      // Over the token rule's capacity: never, by tpm alone; rpm's own wait stays finite.
      {
        at: 1,
        cost: 5000,
        expect: { ...no(800, 59_999, NEVER), rule: 'tpm' },
        rules: { rpm: no(0, 59_999, 59_999) },
      },
      { at: MINUTE, cost: 1000, expect: { ...ok(0, MINUTE), rule: 'tpm' }, rules: { rpm: ok(1, MINUTE) } },
    ],
  },
  {
    name: 'counts: settle changes only the rules that count cost',
    rules: [rpm(5), tpm(1000)],
    steps: [
      { at: 0, cost: 300, expect: { ...ok(4, MINUTE), rule: 'rpm' }, rules: { tpm: ok(700, MINUTE) } },
      // Refund 200 on tpm; rpm keeps its 1.
      settle(1000, 0, 100),
      { at: 1000, op: 'peek', expect: { ...ok(3, 59_000), rule: 'rpm' }, rules: { tpm: ok(899, 59_000) } },
      { at: 1000, cost: 50, expect: { ...ok(3, 59_000), rule: 'rpm' }, rules: { tpm: ok(850, 59_000) } },
      // Charge 850 on tpm: it is full; rpm still has 3.
      settle(2000, 3, 900),
      {
        at: 2000,
        op: 'peek',
        expect: { ...no(0, 58_000, 58_000), rule: 'tpm' },
        rules: { rpm: { allowed: true, remaining: 3 } },
      },
    ],
  },
  {
    name: 'counts: a plan may mix both kinds; cost 50 takes 1 of 60 requests and 50 tokens',
    plans: {
      free: [rpm(60), tpm(100)],
      pro: [rpm(600), tpm(10_000)],
    },
    defaultPlan: 'free',
    steps: [
      {
        at: 0,
        cost: 50,
        expect: { ...ok(50, MINUTE), rule: 'free.tpm' },
        rules: { 'free.rpm': ok(59, MINUTE) },
      },
      {
        at: 1,
        cost: 50,
        expect: { ...ok(0, 59_999), rule: 'free.tpm' },
        rules: { 'free.rpm': ok(58, 59_999) },
      },
      {
        at: 2,
        expect: { ...no(0, 59_998, 59_998), rule: 'free.tpm' },
        rules: { 'free.rpm': { allowed: true, remaining: 58 } },
      },
      // The same stored rules: usage carries over to the other plan, each in its own units.
      {
        at: 2,
        cost: 50,
        plan: 'pro',
        expect: { ...ok(597, 59_998), rule: 'pro.rpm' },
        rules: { 'pro.tpm': ok(9850, 59_998) },
      },
    ],
  },
  {
    name: 'counts: a concurrency rule counting requests holds one slot per request, whatever the cost',
    rules: [{ name: 'slots', algorithm: 'concurrency', counts: 'requests', limit: 2 }, tpm(1000)],
    steps: [
      {
        at: 0,
        cost: 100,
        expect: { ...ok(1, MINUTE), rule: 'slots' },
        rules: { slots: { inFlight: 1 }, tpm: ok(900, MINUTE) },
      },
      {
        at: 0,
        cost: 100,
        expect: { ...ok(0, MINUTE), rule: 'slots' },
        rules: { slots: { inFlight: 2 }, tpm: ok(800, MINUTE) },
      },
      {
        at: 1,
        expect: { ...no(0, 59_999, 59_999), rule: 'slots' },
        rules: { tpm: { allowed: true, remaining: 800 } },
      },
      // Renewing a request of cost 100 renews its one slot, and says every slot was held.
      { at: 2, op: 'renew', of: 1, renews: true },
      { at: 2, op: 'release', of: 0 },
      {
        at: 2,
        expect: { ...ok(0, MINUTE), rule: 'slots' },
        rules: { slots: { inFlight: 2 }, tpm: ok(799, 59_998) },
      },
    ],
  },
  {
    name: 'counts: a shadow rule counting requests reports without denying',
    rules: [tpm(1000), { ...rpm(1), shadow: true }],
    steps: [
      {
        at: 0,
        cost: 100,
        expect: { ...ok(900, MINUTE), rule: 'tpm', shadowDenied: [] },
        rules: { rpm: ok(0, MINUTE) },
      },
      {
        at: 1,
        cost: 100,
        expect: { ...ok(800, 59_999), rule: 'tpm', shadowDenied: ['rpm'] },
        rules: { rpm: { allowed: false, remaining: 0, shadow: true } },
      },
    ],
  },
  {
    name: 'counts: a request rule with a block blocks on its denial, whatever the cost',
    rules: [{ ...rpm(1), block: '2m' }, tpm(1000)],
    steps: [
      { at: 0, cost: 5, expect: { ...ok(0, MINUTE), rule: 'rpm' }, rules: { tpm: ok(995, MINUTE) } },
      { at: 1, cost: 5, expect: { ...no(0, 120_000, 120_000), rule: 'rpm', blocked: true } },
      {
        at: MINUTE,
        cost: 5,
        expect: { ...no(0, 60_001, 60_001), rule: 'rpm', blocked: true },
        rules: { tpm: { allowed: true, remaining: 1000 } },
      },
    ],
  },
  ...(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as const).map(eachAlgorithm),
];
