/**
 * Specification cases for plans and for reserve-then-settle, run by the same runner on every
 * store. Windows are long (60 s) so that Redis, which expires keys on its real clock while these
 * cases move a fake one, never drops state between two steps.
 */
import { no, ok, type SpecCase, type Step } from './spec-cases.js';

const settle = (at: number, settles: number, actual: number): Step => ({ at, op: 'settle', settles, actual });

const MINUTE = 60_000;

// token-bucket and gcra settle identically (the TAT moves as the tokens do), so they share one table.
// limit 10 per minute, burst 10: one token every 6 s.
const bucketSettleSteps: Step[] = [
  { at: 0, cost: 6, expect: ok(4, 36_000) },
  // Refund 4: the bucket holds 5 + 4 = 9 tokens.
  settle(6000, 0, 2),
  { at: 6000, op: 'peek', expect: ok(8, 12_000) },
  { at: 6000, cost: 9, expect: ok(0, MINUTE) },
  // Charge 10 more: a full bucket of debt (-10 tokens), which later requests wait out.
  settle(6000, 3, 19),
  { at: 6000, op: 'peek', expect: no(0, 120_000, 66_000) },
  { at: 71_999, expect: no(0, 54_001, 1) },
  { at: 72_000, expect: ok(0, MINUTE) },
  // A charge of 99 more is capped at one bucket of debt.
  settle(72_000, 7, 100),
  { at: 72_000, op: 'peek', expect: no(0, 120_000, 66_000) },
];

export const TENANT_CASES: SpecCase[] = [
  {
    name: 'plans: each plan its rules, shown as <plan>.<rule>; usage carries across a plan change',
    plans: {
      free: { name: 'minute', algorithm: 'fixed-window', limit: 3, window: MINUTE },
      pro: [
        { name: 'minute', algorithm: 'fixed-window', limit: 10, window: MINUTE },
        { name: 'burst', algorithm: 'token-bucket', limit: 100, window: MINUTE, burst: 5 },
      ],
    },
    defaultPlan: 'free',
    steps: [
      { at: 0, cost: 3, expect: { ...ok(0, MINUTE), rule: 'free.minute' } },
      { at: 1, expect: { ...no(0, 59_999, 59_999), rule: 'free.minute' } },
      {
        at: 1,
        plan: 'pro',
        expect: { ...ok(4, 600), rule: 'pro.burst' },
        rules: { 'pro.minute': ok(6, 59_999) },
      },
      { at: 2, plan: 'free', expect: { ...no(0, 59_998, 59_998), rule: 'free.minute' } },
    ],
  },
  {
    name: 'settle fixed-window: refund and charge within the window; debt until the window ends',
    rules: { name: 'fw', algorithm: 'fixed-window', limit: 10, window: MINUTE },
    steps: [
      { at: 0, cost: 6, expect: ok(4, MINUTE) },
      settle(1000, 0, 2),
      { at: 1000, op: 'peek', expect: ok(7, 59_000) },
      { at: 2000, cost: 8, expect: ok(0, 58_000) },
      // Charge 4: 14 counted, over the limit until the window ends.
      settle(3000, 3, 12),
      { at: 3000, op: 'peek', expect: no(0, 57_000, 57_000) },
      { at: MINUTE, expect: ok(9, MINUTE) },
      // A charge is capped at one limit of debt (20 counted).
      settle(MINUTE, 6, 50),
      { at: MINUTE, cost: 10, op: 'peek', expect: no(0, MINUTE, MINUTE) },
    ],
  },
  {
    name: 'settle fixed-window: a later window takes no refund and takes a charge',
    rules: { name: 'fw', algorithm: 'fixed-window', limit: 10, window: MINUTE },
    steps: [
      { at: 30_000, cost: 6, expect: ok(4, 30_000) },
      { at: 31_000, cost: 2, expect: ok(2, 29_000) },
      settle(72_000, 0, 0),
      settle(72_000, 1, 5),
      { at: 72_000, op: 'peek', expect: ok(6, 48_000) },
      { at: 72_000, cost: 8, expect: no(7, 48_000, 48_000) },
    ],
  },
  {
    name: 'settle: a denied decision is a no-op; after a reset a refund has nothing to give back',
    rules: { name: 'fw', algorithm: 'fixed-window', limit: 10, window: MINUTE },
    steps: [
      { at: 0, cost: 11, expect: no(10, 0, Number.POSITIVE_INFINITY) },
      settle(0, 0, 0),
      { at: 0, cost: 5, expect: ok(5, MINUTE) },
      { at: 1000, op: 'reset' },
      settle(1000, 2, 1),
      { at: 1000, cost: 10, op: 'peek', expect: ok(0, 59_000) },
    ],
  },
  {
    name: 'settle sliding-window: the current window, then the previous one once it has turned',
    rules: { name: 'sw', algorithm: 'sliding-window', limit: 10, window: 10_000 },
    steps: [
      { at: 0, cost: 6, expect: ok(4, 20_000) },
      settle(1000, 0, 2),
      { at: 1000, op: 'peek', expect: ok(7, 19_000) },
      { at: 2000, cost: 4, expect: ok(4, 18_000) },
      // Settled in the next window: the refund comes off the previous window's count (6 → 2).
      settle(12_500, 3, 0),
      { at: 12_500, op: 'peek', expect: ok(7, 17_500) },
      { at: 12_500, cost: 5, expect: ok(3, 17_500) },
      settle(13_000, 6, 9),
      { at: 13_000, op: 'peek', expect: no(0, 17_000, 7000) },
      { at: 20_000, expect: ok(0, 20_000) },
    ],
  },
  {
    name: 'settle token-bucket: refunds up to a full bucket, charges down to one bucket of debt',
    rules: { name: 'tb', algorithm: 'token-bucket', limit: 10, window: MINUTE },
    steps: bucketSettleSteps,
  },
  {
    name: 'settle gcra: exactly as the token bucket',
    rules: { name: 'gc', algorithm: 'gcra', limit: 10, window: MINUTE },
    steps: bucketSettleSteps,
  },
  {
    name: 'settle sliding-log: the recorded entry changes cost and keeps its time',
    rules: { name: 'sl', algorithm: 'sliding-log', limit: 10, window: MINUTE },
    steps: [
      { at: 0, cost: 6, expect: ok(4, MINUTE) },
      { at: 1000, cost: 3, expect: ok(1, MINUTE) },
      settle(2000, 0, 1),
      { at: 2000, cost: 6, op: 'peek', expect: ok(0, MINUTE) },
      // 11 would be over: the entry at 0, now of cost 1, leaving the window makes room.
      { at: 2000, cost: 7, expect: no(6, 59_000, 58_000) },
      settle(3000, 1, 9),
      { at: 3000, op: 'peek', expect: no(0, 58_000, 57_000) },
      { at: 61_000, expect: ok(9, MINUTE) },
    ],
  },
  {
    name: 'settle sliding-log: an expired entry takes no refund; a charge for it is recorded now',
    rules: { name: 'sl', algorithm: 'sliding-log', limit: 10, window: MINUTE },
    steps: [
      { at: 0, cost: 4, expect: ok(6, MINUTE) },
      { at: 0, cost: 3, expect: ok(3, MINUTE) },
      settle(MINUTE, 0, 0),
      settle(MINUTE, 1, 5),
      { at: MINUTE, cost: 8, op: 'peek', expect: ok(0, MINUTE) },
      { at: MINUTE, cost: 9, expect: no(8, MINUTE, MINUTE) },
    ],
  },
  {
    name: 'settle sliding-log after a reset: the entry is gone, a charge is recorded now',
    rules: { name: 'sl', algorithm: 'sliding-log', limit: 10, window: MINUTE },
    steps: [
      { at: 0, cost: 5, expect: ok(5, MINUTE) },
      { at: 1000, op: 'reset' },
      settle(1000, 0, 8),
      { at: 1000, cost: 7, op: 'peek', expect: ok(0, MINUTE) },
      { at: 1000, cost: 8, op: 'peek', expect: no(7, MINUTE, MINUTE) },
    ],
  },
  {
    name: 'settle several rules: every rule at once',
    rules: [
      { name: 'fw', algorithm: 'fixed-window', limit: 10, window: MINUTE },
      { name: 'tb', algorithm: 'token-bucket', limit: 5, window: MINUTE },
    ],
    steps: [
      { at: 0, cost: 4, expect: { ...ok(1, 48_000), rule: 'tb' }, rules: { fw: ok(6, MINUTE) } },
      settle(0, 0, 1),
      { at: 0, op: 'peek', expect: { ...ok(3, 24_000), rule: 'tb' }, rules: { fw: ok(8, MINUTE) } },
    ],
  },
];
