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
];
