/**
 * The specification table: for each algorithm, a sequence of requests at given times and the
 * exact decision each must get. Every store runs these same cases (memory with a fake clock,
 * Redis with the same times passed to the script), so the implementations cannot drift apart.
 */
import type { RuleOptions } from '../../src/index.js';

export interface Expected {
  allowed: boolean;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
  rule?: string;
  /** The decision's `shadowDenied`, when given. */
  shadowDenied?: string[];
  /** Whether the decision says the key is blocked (`blocked: true`), when given. */
  blocked?: boolean;
}

export interface Step {
  /** Milliseconds after BASE_TIME. */
  at: number;
  cost?: number;
  /**
   * `settle` settles the decision of step `settles` at cost `actual`, `refund` refunds it whole;
   * `reset` resets the key;
   * `release` and `renew` release or renew the slots of step `of`'s decision (`renews`: whether
   * every slot was still held).
   */
  op?: 'check' | 'peek' | 'settle' | 'refund' | 'reset' | 'release' | 'renew';
  of?: number;
  renews?: boolean;
  /** With plans: the plan to check under (default: the case's defaultPlan). */
  plan?: string;
  settles?: number;
  actual?: number;
  /** Required for checks and peeks. */
  expect?: Expected;
  /** Per-rule expectations for multi-rule cases, by rule name. */
  rules?: Record<string, Partial<Expected> & { shadow?: true; inFlight?: number }>;
}

export interface SpecCase {
  name: string;
  /** The instant step times count from (default BASE_TIME). */
  base?: number;
  rules?: RuleOptions | RuleOptions[];
  plans?: Record<string, RuleOptions | RuleOptions[]>;
  defaultPlan?: string;
  /** The limiter's `shadow` option. */
  shadow?: boolean;
  steps: Step[];
}

/** A time aligned to every window used below (a whole day since the epoch). */
export const BASE_TIME = 1_700_006_400_000;

export const ok = (remaining: number, resetMs: number): Expected => ({
  allowed: true,
  remaining,
  resetMs,
  retryAfterMs: 0,
});
export const no = (remaining: number, resetMs: number, retryAfterMs: number): Expected => ({
  allowed: false,
  remaining,
  resetMs,
  retryAfterMs,
});

// token-bucket and gcra must agree exactly, so they share one table.
const bucketSteps: Step[] = [
  { at: 0, cost: 3, expect: ok(1, 1500) },
  { at: 0, cost: 2, expect: no(1, 1500, 500) },
  { at: 250, cost: 2, expect: no(1, 1250, 250) },
  { at: 500, cost: 2, expect: ok(0, 2000) },
  { at: 500, cost: 5, op: 'peek', expect: no(0, 2000, Number.POSITIVE_INFINITY) },
  { at: 3000, expect: ok(3, 500) },
  { at: 3001, op: 'peek', expect: ok(2, 999) },
  { at: 3001, expect: ok(2, 999) },
];

// go-redis/redis_rate's published example: PerSecond(10), burst 10.
const redisRateSteps: Step[] = [
  { at: 0, expect: ok(9, 100) },
  { at: 0, cost: 2, expect: ok(7, 300) },
  { at: 0, cost: 7, expect: ok(0, 1000) },
  { at: 0, expect: no(0, 1000, 100) },
];

export const SPEC_CASES: SpecCase[] = [
  {
    name: 'fixed-window: counts per clock-aligned window, denials consume nothing',
    rules: { name: 'fw', algorithm: 'fixed-window', limit: 3, window: 1000 },
    steps: [
      { at: 0, expect: ok(2, 1000) },
      { at: 100, cost: 2, expect: ok(0, 900) },
      { at: 200, expect: no(0, 800, 800) },
      { at: 200, op: 'peek', expect: no(0, 800, 800) },
      { at: 999, cost: 4, expect: no(0, 1, Number.POSITIVE_INFINITY) },
      { at: 1000, expect: ok(2, 1000) },
      { at: 1500, cost: 2, op: 'peek', expect: ok(0, 500) },
      { at: 1500, expect: ok(1, 500) },
    ],
  },
  {
    name: 'sliding-window: previous window weighted by overlap, exact retry times',
    rules: { name: 'sw', algorithm: 'sliding-window', limit: 4, window: 1000 },
    steps: [
      { at: 0, cost: 3, expect: ok(1, 2000) },
      { at: 500, cost: 2, expect: no(1, 1500, 834) },
      { at: 1333, cost: 2, expect: no(1, 667, 1) },
      { at: 1334, cost: 2, expect: ok(0, 1666) },
      { at: 1500, expect: no(0, 1500, 167) },
      { at: 1666, expect: no(0, 1334, 1) },
      { at: 1667, expect: ok(0, 1333) },
      { at: 3500, cost: 4, expect: ok(0, 1500) },
      { at: 3600, cost: 5, expect: no(0, 1400, Number.POSITIVE_INFINITY) },
    ],
  },
  // A Redis store stamps checks with the server's clock as each process reads it, off by up to
  // half a round trip: a stamp behind the one that last wrote a key must not move its time back.
  {
    name: 'fixed-window: a stamp behind the key counts in the window it opened',
    rules: { name: 'fw', algorithm: 'fixed-window', limit: 3, window: 1000 },
    steps: [
      { at: 1000, expect: ok(2, 1000) },
      { at: 998, expect: ok(1, 1000) },
      { at: 999, expect: ok(0, 1000) },
      { at: 990, expect: no(0, 1000, 1000) },
      { at: 1500, expect: no(0, 500, 500) },
    ],
  },
  {
    name: 'sliding-window: a stamp behind the key counts in the window it opened',
    rules: { name: 'sw', algorithm: 'sliding-window', limit: 3, window: 1000 },
    steps: [
      { at: 1000, expect: ok(2, 2000) },
      { at: 999, expect: ok(1, 2000) },
      { at: 1000, expect: ok(0, 2000) },
      { at: 995, expect: no(0, 2000, 1334) },
    ],
  },
  {
    name: 'token-bucket: a stamp behind the key refills nothing twice',
    rules: { name: 'tb', algorithm: 'token-bucket', limit: 2, window: 1000 },
    steps: [
      { at: 1000, expect: ok(1, 500) },
      { at: 900, expect: ok(0, 1000) },
      { at: 1100, expect: no(0, 900, 400) },
    ],
  },
  {
    name: 'token-bucket: continuous refill up to the burst',
    rules: { name: 'tb', algorithm: 'token-bucket', limit: 2, window: 1000, burst: 4 },
    steps: bucketSteps,
  },
  {
    name: 'gcra: admits exactly what the token bucket admits',
    rules: { name: 'gc', algorithm: 'gcra', limit: 2, window: 1000, burst: 4 },
    steps: bucketSteps,
  },
  {
    name: 'gcra: the go-redis/redis_rate example',
    rules: { name: 'gc', algorithm: 'gcra', limit: 10, window: '1s' },
    steps: redisRateSteps,
  },
  {
    name: 'token-bucket: the go-redis/redis_rate example',
    rules: { name: 'tb', algorithm: 'token-bucket', limit: 10, window: '1s' },
    steps: redisRateSteps,
  },
  {
    name: 'gcra: fractional emission interval (window not a multiple of limit)',
    rules: { name: 'gc', algorithm: 'gcra', limit: 3, window: 1000 },
    steps: [
      { at: 0, expect: ok(2, 334) },
      { at: 0, expect: ok(1, 667) },
      { at: 0, expect: ok(0, 1000) },
      { at: 1, expect: no(0, 999, 333) },
      { at: 334, expect: ok(0, 1000) },
    ],
  },
  {
    name: 'sliding-log: exact, same-millisecond requests both count',
    rules: { name: 'sl', algorithm: 'sliding-log', limit: 3, window: 1000 },
    steps: [
      { at: 0, expect: ok(2, 1000) },
      { at: 0, expect: ok(1, 1000) },
      { at: 400, cost: 2, expect: no(1, 600, 600) },
      { at: 400, expect: ok(0, 1000) },
      { at: 999, expect: no(0, 401, 1) },
      { at: 1000, expect: ok(1, 1000) },
      { at: 1000, cost: 4, expect: no(1, 1000, Number.POSITIVE_INFINITY) },
      { at: 1100, cost: 2, expect: no(1, 900, 300) },
      { at: 1400, cost: 2, op: 'peek', expect: ok(0, 1000) },
      { at: 1400, cost: 2, expect: ok(0, 1000) },
      { at: 1401, op: 'peek', expect: no(0, 999, 599) },
    ],
  },
  {
    name: 'multiple rules: all or nothing, the binding rule is reported',
    rules: [
      { name: 'window', algorithm: 'fixed-window', limit: 5, window: 1000 },
      { name: 'bucket', algorithm: 'token-bucket', limit: 1, window: 1000, burst: 2 },
    ],
    steps: [
      { at: 0, expect: { ...ok(1, 1000), rule: 'bucket' }, rules: { window: ok(4, 1000) } },
      { at: 1, expect: { ...ok(0, 1999), rule: 'bucket' }, rules: { window: ok(3, 999) } },
      // The window would allow it, but the bucket denies: nothing is consumed from either.
      { at: 2, expect: { ...no(0, 1998, 998), rule: 'bucket' }, rules: { window: ok(3, 998) } },
      { at: 3, op: 'peek', expect: { ...no(0, 1997, 997), rule: 'bucket' }, rules: { window: ok(3, 997) } },
      { at: 1000, expect: { ...ok(0, 2000), rule: 'bucket' }, rules: { window: ok(4, 1000) } },
    ],
  },
  {
    name: 'multiple rules: the longest wait binds when several deny',
    rules: [
      { name: 'short', algorithm: 'sliding-log', limit: 1, window: 100 },
      { name: 'long', algorithm: 'fixed-window', limit: 1, window: 1000 },
    ],
    steps: [
      { at: 0, expect: { ...ok(0, 100), rule: 'short' } },
      { at: 10, expect: { ...no(0, 990, 990), rule: 'long' }, rules: { short: no(0, 90, 90) } },
      { at: 500, expect: { ...no(0, 500, 500), rule: 'long' }, rules: { short: ok(1, 0) } },
    ],
  },
  {
    name: 'concurrency: slots are held until released or their lease runs out',
    rules: { name: 'inflight', algorithm: 'concurrency', limit: 2, lease: 1000 },
    steps: [
      { at: 0, expect: ok(1, 1000) },
      { at: 100, expect: ok(0, 1000) },
      // retryAfterMs: when the earliest lease runs out (step 0's, taken at 0).
      { at: 200, expect: no(0, 900, 800) },
      { at: 300, op: 'release', of: 0 },
      { at: 300, op: 'peek', expect: ok(0, 1000) },
      // A second release frees nothing: step 1's slot stays taken.
      { at: 300, op: 'release', of: 0 },
      { at: 300, expect: ok(0, 1000) },
      { at: 300, expect: no(0, 1000, 800) },
      // Step 1's lease ran out at 1100 (nobody released it): its slot is free again, not before.
      { at: 1099, expect: no(0, 201, 1) },
      { at: 1100, expect: ok(0, 1000) },
      { at: 1150, op: 'renew', of: 6, renews: true },
      { at: 1300, expect: no(0, 850, 800) },
      // Releasing a denied decision, or renewing a released or expired one, does nothing.
      { at: 1300, op: 'release', of: 11 },
      { at: 1300, op: 'renew', of: 0, renews: false },
      { at: 2100, expect: ok(0, 1000) },
      { at: 3200, op: 'renew', of: 9, renews: false },
      { at: 3200, op: 'peek', expect: ok(1, 1000) },
    ],
  },
  {
    name: 'concurrency: a check takes cost slots, a cost above the limit never passes',
    rules: { name: 'inflight', algorithm: 'concurrency', limit: 3, lease: 1000 },
    steps: [
      { at: 0, cost: 2, expect: ok(1, 1000) },
      { at: 10, cost: 2, expect: no(1, 990, 990) },
      { at: 20, cost: 4, expect: no(1, 980, Number.POSITIVE_INFINITY) },
      { at: 20, expect: ok(0, 1000) },
      { at: 30, op: 'release', of: 0 },
      { at: 30, cost: 2, expect: ok(0, 1000) },
      { at: 40, expect: no(0, 990, 980) },
      { at: 1020, cost: 2, expect: no(1, 10, 10) },
    ],
  },
  {
    name: 'concurrency: a reset frees every slot, and a release from before it frees nothing since',
    rules: { name: 'inflight', algorithm: 'concurrency', limit: 1, lease: 1000 },
    steps: [
      { at: 0, expect: ok(0, 1000) },
      { at: 0, op: 'reset' },
      { at: 0, expect: ok(0, 1000) },
      { at: 0, op: 'release', of: 0 },
      { at: 0, expect: no(0, 1000, 1000) },
      { at: 10, op: 'release', of: 2 },
      { at: 10, expect: ok(0, 1000) },
    ],
  },
  {
    name: 'concurrency with a rate rule: all or nothing',
    rules: [
      { name: 'inflight', algorithm: 'concurrency', limit: 1, lease: 1000 },
      { name: 'minute', algorithm: 'fixed-window', limit: 2, window: 60_000 },
    ],
    steps: [
      { at: 0, expect: { ...ok(0, 1000), rule: 'inflight' }, rules: { minute: ok(1, 60_000) } },
      // Denied for lack of a slot: no rate quota is consumed.
      {
        at: 10,
        expect: { ...no(0, 990, 990), rule: 'inflight' },
        rules: { minute: { allowed: true, remaining: 1 } },
      },
      { at: 20, op: 'release', of: 0 },
      { at: 20, expect: { ...ok(0, 1000), rule: 'inflight' }, rules: { minute: ok(0, 59_980) } },
      { at: 30, op: 'release', of: 3 },
      // Denied by the rate rule: no slot is taken.
      {
        at: 30,
        expect: { ...no(0, 59_970, 59_970), rule: 'minute' },
        rules: { inflight: { allowed: true, remaining: 1 } },
      },
      {
        at: 40,
        op: 'peek',
        expect: { ...no(0, 59_960, 59_960), rule: 'minute' },
        rules: { inflight: { remaining: 1 } },
      },
    ],
  },
];
