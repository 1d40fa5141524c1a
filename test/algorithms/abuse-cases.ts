/**
 * Specification cases for shadow rules and block periods: run by every store with the rest of
 * the table (see run-spec.ts), so the memory store and the Lua script cannot drift apart.
 */
import { no, ok, type SpecCase } from './spec-cases.js';

export const ABUSE_CASES: SpecCase[] = [
  {
    name: 'shadow: a shadow rule over its limit never denies, and is named in shadowDenied',
    rules: { name: 'trial', algorithm: 'fixed-window', limit: 1, window: 1000, shadow: true },
    steps: [
      { at: 0, expect: { ...ok(0, 1000), shadowDenied: [] } },
      // Would be denied: allowed, nothing consumed, the rule's own view says denied.
      {
        at: 1,
        expect: { ...ok(0, 999), shadowDenied: ['trial'] },
        rules: { trial: { allowed: false, retryAfterMs: 999, shadow: true } },
      },
      { at: 2, op: 'peek', expect: { ...ok(0, 998), shadowDenied: ['trial'] } },
      { at: 1000, expect: { ...ok(0, 1000), shadowDenied: [] } },
    ],
  },
  {
    name: 'shadow: beside an enforced rule, the enforced rule behaves exactly as alone',
    rules: [
      { name: 'base', algorithm: 'fixed-window', limit: 3, window: 1000 },
      { name: 'trial', algorithm: 'fixed-window', limit: 1, window: 1000, shadow: true },
    ],
    steps: [
      { at: 0, expect: { ...ok(2, 1000), rule: 'base', shadowDenied: [] }, rules: { trial: ok(0, 1000) } },
      {
        at: 1,
        expect: { ...ok(1, 999), rule: 'base', shadowDenied: ['trial'] },
        rules: { trial: no(0, 999, 999) },
      },
      { at: 2, expect: { ...ok(0, 998), rule: 'base', shadowDenied: ['trial'] } },
      { at: 3, expect: { ...no(0, 997, 997), rule: 'base', shadowDenied: ['trial'] } },
      { at: 1000, expect: { ...ok(2, 1000), rule: 'base', shadowDenied: [] }, rules: { trial: ok(0, 1000) } },
    ],
  },
  {
    name: 'shadow: an enforced denial consumes nothing from a shadow rule, as if it were enforced',
    rules: [
      { name: 'base', algorithm: 'fixed-window', limit: 1, window: 1000 },
      { name: 'trial', algorithm: 'token-bucket', limit: 3, window: 3000, shadow: true },
    ],
    steps: [
      { at: 0, expect: { ...ok(0, 1000), rule: 'base', shadowDenied: [] }, rules: { trial: ok(2, 1000) } },
      {
        at: 0,
        expect: { ...no(0, 1000, 1000), rule: 'base', shadowDenied: [] },
        rules: { trial: ok(2, 1000) },
      },
      { at: 1000, expect: { ...ok(0, 1000), rule: 'base' }, rules: { trial: ok(2, 1000) } },
    ],
  },
  {
    name: 'shadow: the limiter option makes every rule a shadow rule',
    shadow: true,
    rules: [
      { name: 'a', algorithm: 'fixed-window', limit: 1, window: 1000 },
      { name: 'b', algorithm: 'sliding-log', limit: 2, window: 1000 },
    ],
    steps: [
      { at: 0, expect: { ...ok(0, 1000), rule: 'a', shadowDenied: [] } },
      { at: 10, expect: { ...ok(0, 990), rule: 'a', shadowDenied: ['a'] }, rules: { b: ok(0, 1000) } },
      { at: 20, expect: { ...ok(0, 980), rule: 'a', shadowDenied: ['a', 'b'] } },
    ],
  },
  {
    name: 'block: a denial blocks the key past the window; a peek never starts one, and says blocked while one holds; reset lifts it',
    rules: { name: 'login', algorithm: 'fixed-window', limit: 2, window: 1000, block: '5s' },
    steps: [
      { at: 0, expect: ok(1, 1000) },
      { at: 1, expect: { ...ok(0, 999), blocked: false } },
      { at: 1, op: 'peek', expect: { ...no(0, 999, 999), blocked: false } },
      // The denial starts a 5 s block: the wait is the block's end, not the window's.
      { at: 2, expect: { ...no(0, 5000, 5000), blocked: true } },
      { at: 1500, expect: { ...no(0, 3502, 3502), blocked: true } },
      // Regression: a peek during the block was not marked blocked.
      { at: 1500, op: 'peek', expect: { ...no(0, 3502, 3502), blocked: true } },
      // A cost the rule can never admit is answered "never", not "blocked".
      { at: 1500, cost: 3, expect: { ...no(0, 3502, Number.POSITIVE_INFINITY), blocked: false } },
      {
        at: 1500,
        cost: 3,
        op: 'peek',
        expect: { ...no(0, 3502, Number.POSITIVE_INFINITY), blocked: false },
      },
      { at: 5002, expect: { ...ok(1, 998), blocked: false } },
      { at: 5003, expect: ok(0, 997) },
      { at: 5004, expect: { ...no(0, 5000, 5000), blocked: true } },
      { at: 5100, op: 'reset' },
      { at: 5100, expect: ok(1, 900) },
    ],
  },
  {
    name: 'block: each new block within forgetAfter lasts factor times the last, up to max, then is forgotten',
    rules: {
      name: 'login',
      algorithm: 'fixed-window',
      limit: 1,
      window: 1000,
      block: { duration: 1000, factor: 2, max: 3000, forgetAfter: 10_000 },
    },
    steps: [
      { at: 0, expect: ok(0, 1000) },
      { at: 1, expect: no(0, 1000, 1000) },
      { at: 1001, expect: ok(0, 999) },
      { at: 1002, expect: no(0, 2000, 2000) },
      { at: 3001, expect: no(0, 1, 1) },
      { at: 3002, expect: ok(0, 998) },
      { at: 3003, expect: no(0, 3000, 3000) },
      { at: 6003, expect: ok(0, 997) },
      { at: 6004, expect: no(0, 3000, 3000) },
      // Quiet for forgetAfter past the last block's end: the next block is the first length again.
      { at: 19_004, expect: ok(0, 996) },
      { at: 19_005, expect: no(0, 1000, 1000) },
    ],
  },
  {
    name: 'block: a shadow rule keeps its block yet never denies; the enforced rule is unchanged',
    rules: [
      { name: 'base', algorithm: 'fixed-window', limit: 10, window: 1000 },
      { name: 'trial', algorithm: 'fixed-window', limit: 1, window: 1000, block: '5s', shadow: true },
    ],
    steps: [
      { at: 0, expect: { ...ok(9, 1000), rule: 'base', shadowDenied: [] } },
      {
        at: 1,
        expect: { ...ok(8, 999), rule: 'base', shadowDenied: ['trial'], blocked: false },
        rules: { trial: { ...no(0, 5000, 5000), blocked: true } },
      },
      {
        at: 1000,
        op: 'peek',
        expect: { ...ok(9, 1000), rule: 'base', shadowDenied: ['trial'], blocked: false },
        rules: { trial: { ...no(0, 4001, 4001), blocked: true } },
      },
      {
        at: 1000,
        expect: { ...ok(9, 1000), rule: 'base', shadowDenied: ['trial'] },
        rules: { trial: no(0, 4001, 4001) },
      },
      { at: 5001, expect: { ...ok(9, 999), rule: 'base', shadowDenied: [] }, rules: { trial: ok(0, 999) } },
    ],
  },
];
