/**
 * Rule sets at the bound a limiter accepts (MAX_RULES), and bursts of concurrent checks on them:
 * with a batch's keys bounded and the script reading and deleting in slices, every check is
 * decided exactly, whatever shares its call.
 */
import { expect } from 'vitest';
import type { AlgorithmName, Limiter, RuleOptions, Store } from '../../src/index.js';
import { createLimiter } from '../../src/index.js';
import { MAX_RULES } from '../../src/rules.js';
import { SLOW_MACHINE_TIMEOUT } from './timeouts.js';

/** `count` rules of one algorithm, each `limit` per day (nothing refills while a test runs). */
export function manyRules(
  algorithm: AlgorithmName,
  limit: number,
  count = MAX_RULES,
  name = 'r',
): RuleOptions[] {
  return Array.from({ length: count }, (_, i) => ({ name: `${name}${i}`, algorithm, limit, window: '1d' }));
}

export function limiterOn(store: Store, rules: RuleOptions[], prefix: string): Limiter {
  // Exact counts over a real server: the deny cache would answer repeats locally.
  return createLimiter({ rules, store, prefix, timeout: SLOW_MACHINE_TIMEOUT, denyCache: false });
}

/**
 * 40 concurrent checks of one key on a limit of 33 per rule, and 40 of distinct keys: exactly 33
 * allowed, then 40; none answered by the store error policy.
 */
export async function expectExactBursts(limiter: Limiter, tag: string): Promise<void> {
  const oneKey = await Promise.all(Array.from({ length: 40 }, () => limiter.check(`${tag}-one`)));
  expect(oneKey.filter((decision) => decision.degraded !== false)).toEqual([]);
  expect(oneKey.filter((decision) => decision.allowed)).toHaveLength(33);
  const spread = await Promise.all(Array.from({ length: 40 }, (_, i) => limiter.check(`${tag}-${i}`)));
  expect(spread.filter((decision) => decision.degraded !== false)).toEqual([]);
  expect(spread.map((decision) => decision.remaining)).toEqual(spread.map(() => 32));
}
