/**
 * Rules in the config file: `'120/1m'` strings or `{ name?, algorithm?, limit, window?, burst?,
 * block?, shadow?, counts?, quotaLease?, period?, timeZone?, anchor?, thresholds? }` objects, checked in context by the core's own rule
 * validation so messages name the field.
 */
import type { AlgorithmName, RuleOptions } from '../../index.js';
import { ALGORITHM_NAMES, describe, formatDuration, resolveRules } from '../../internal.js';
import { parseRate } from '../args.js';
import { ConfigError, core, durationAt, type Fields, fail, objectAt, oneOf, stringAt } from './check.js';

export const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const NAME_HINT = 'must be 1-64 letters, digits, _ . - (starting with a letter or digit)';

/**
 * A rule list: objects (the fields above) where `limit` may be written `120/1m`, or plain
 * strings `'120/1m'`. The algorithm defaults to sliding-window.
 */
export function parseRuleList(
  value: unknown,
  path: string,
  namePrefix = '',
  defaultAlgorithm: AlgorithmName = 'sliding-window',
): RuleOptions[] {
  const list = Array.isArray(value) ? value : [value];
  const rules = list.map((item, i) => {
    const where = Array.isArray(value) ? `${path}[${i}]` : path;
    return parseRule(typeof item === 'string' ? { limit: item } : item, where, namePrefix, defaultAlgorithm);
  });
  if (rules.length === 0) fail(path, 'give at least one rule, e.g. 120/1m');
  core(() => resolveRules(Array.isArray(value) ? rules : rules[0], path));
  checkLeasing(rules, path);
  return rules;
}

/** Whether a rule leases quota (`quotaLease` given and not false). */
function leases(rule: RuleOptions): boolean {
  return rule.quotaLease !== undefined && rule.quotaLease !== false;
}

/**
 * Rules checked together (a route's own, its plan's, concurrency) lease on all of them or none,
 * as the limiter requires (src/core/plans.ts): refused here so `serve` fails naming the config.
 */
export function checkLeasing(rules: readonly RuleOptions[], path: string): void {
  const leasing = rules.filter(leases).length;
  if (leasing > 0 && leasing < rules.length) {
    fail(
      path,
      `quotaLease is set on ${leasing} of ${rules.length} rules checked together (a route's own rules, its plan's unless inherit: false, and concurrency rules, which cannot lease); set it on all of them or on none`,
    );
  }
}

/** Refuses `shadow: true` at `path` over rules that lease: a shadow rule cannot (src/rules.ts). */
export function checkShadow(rules: readonly RuleOptions[], path: string, whose: string): void {
  if (rules.some(leases)) {
    fail(
      path,
      `not allowed with quotaLease on ${whose}: slices are admitted locally, where a shadow rule cannot report its would-be denials`,
    );
  }
}

function parseRule(
  value: unknown,
  path: string,
  namePrefix: string,
  defaultAlgorithm: AlgorithmName,
): RuleOptions {
  const fields = objectAt(value, path, [
    'name',
    'algorithm',
    'limit',
    'window',
    'burst',
    'lease',
    'block',
    'shadow',
    'counts',
    'quotaLease',
    'period',
    'timeZone',
    'anchor',
    'thresholds',
  ]);
  const algorithm =
    fields.algorithm === undefined
      ? fields.period === undefined
        ? defaultAlgorithm
        : 'fixed-window'
      : oneOf(fields.algorithm, `${path}.algorithm`, ALGORITHM_NAMES);
  if (algorithm === 'concurrency') return slotRule(fields, path, namePrefix);
  if (fields.period !== undefined) return periodRule(fields, algorithm, path, namePrefix);
  let limit = fields.limit;
  let window = fields.window;
  if (typeof limit === 'string') {
    if (window !== undefined)
      fail(`${path}.window`, `not needed: limit ${JSON.stringify(limit)} already sets the window`);
    let rate: { limit: number; windowMs: number };
    try {
      rate = parseRate(limit, `${path}.limit`);
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    limit = rate.limit;
    window = rate.windowMs;
  } else if (limit === undefined) {
    fail(`${path}.limit`, 'required, e.g. limit: 120/1m');
  } else if (window === undefined) {
    fail(
      `${path}.window`,
      `required with a numeric limit (or write limit: ${JSON.stringify(`${limit}/1m`)})`,
    );
  }
  const rule: Record<string, unknown> = { algorithm, limit, window };
  if (fields.burst !== undefined) rule.burst = fields.burst;
  if (fields.block !== undefined) rule.block = fields.block;
  if (fields.shadow !== undefined) rule.shadow = fields.shadow;
  if (fields.lease !== undefined) rule.lease = fields.lease;
  if (fields.quotaLease !== undefined) rule.quotaLease = fields.quotaLease;
  countsOf(fields, path, rule);
  if (fields.name !== undefined) rule.name = stringAt(fields.name, `${path}.name`, NAME, NAME_HINT);
  else if (namePrefix !== '' && typeof limit === 'number') {
    const windowMs = durationAt(window, `${path}.window`);
    rule.name = `${namePrefix}.${algorithm}-${limit}-per-${formatDuration(windowMs)}`.slice(0, 64);
  }
  // Validated in context (with its siblings) by resolveRules in parseRuleList.
  return rule as unknown as RuleOptions;
}

/**
 * A rule counted by calendar period: `{ limit: 1000000, period: month, timeZone?, anchor?,
 * thresholds? }` (fixed-window, its default algorithm here); the core refuses what does not fit
 * (another algorithm, a window, an unknown zone) naming the field.
 */
function periodRule(fields: Fields, algorithm: AlgorithmName, path: string, namePrefix: string): RuleOptions {
  if (typeof fields.limit !== 'number') {
    fail(
      `${path}.limit`,
      `${describe(fields.limit)} must be a number of units per period, e.g. limit: 1000000`,
    );
  }
  const rule: Record<string, unknown> = { algorithm, limit: fields.limit };
  for (const field of [
    'window',
    'burst',
    'block',
    'shadow',
    'quotaLease',
    'period',
    'timeZone',
    'anchor',
    'thresholds',
  ]) {
    if (fields[field] !== undefined) rule[field] = fields[field];
  }
  countsOf(fields, path, rule);
  if (fields.name !== undefined) rule.name = stringAt(fields.name, `${path}.name`, NAME, NAME_HINT);
  else if (namePrefix !== '')
    rule.name = `${namePrefix}.${algorithm}-${fields.limit}-per-${String(fields.period)}`.slice(0, 64);
  return rule as unknown as RuleOptions;
}

/**
 * A concurrency rule: `{ algorithm: concurrency, limit, lease?, counts?, block?, shadow? }`, or the shorthand `concurrency:
 * N` / `concurrency: { limit, lease, counts }` of a route, plan or the top level (named `concurrency`,
 * after `namePrefix` when there is one).
 */
export function concurrencyRule(value: unknown, path: string, namePrefix = ''): RuleOptions {
  if (typeof value !== 'number' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    fail(path, `${describe(value)} must be a number of requests in flight, e.g. 5, or { limit, lease }`);
  }
  const fields: Fields =
    typeof value === 'number' ? { limit: value } : objectAt(value, path, ['limit', 'lease', 'counts']);
  return slotRule({ ...fields, name: namePrefix === '' ? 'concurrency' : `${namePrefix}.concurrency` }, path);
}

function slotRule(fields: Fields, path: string, namePrefix = ''): RuleOptions {
  if (typeof fields.limit !== 'number') {
    fail(`${path}.limit`, `${describe(fields.limit)} must be a number of requests in flight, e.g. limit: 5`);
  }
  const rule: Record<string, unknown> = { algorithm: 'concurrency', limit: fields.limit };
  if (fields.window !== undefined) fail(`${path}.window`, 'a concurrency rule has no window; give lease');
  if (fields.burst !== undefined) fail(`${path}.burst`, 'a concurrency rule has no burst');
  if (fields.lease !== undefined) rule.lease = fields.lease;
  // The core applies both to a concurrency rule as to any other (a shadow one holds no slot when it would deny).
  if (fields.block !== undefined) rule.block = fields.block;
  if (fields.shadow !== undefined) rule.shadow = fields.shadow;
  // Refused by the core, naming the algorithms that lease.
  if (fields.quotaLease !== undefined) rule.quotaLease = fields.quotaLease;
  countsOf(fields, path, rule);
  if (fields.name !== undefined) rule.name = stringAt(fields.name, `${path}.name`, NAME, NAME_HINT);
  else if (namePrefix !== '') rule.name = `${namePrefix}.concurrency-${fields.limit}`.slice(0, 64);
  core(() => resolveRules(rule, path));
  return rule as unknown as RuleOptions;
}

/** A rule's `counts: requests | cost` (what a request takes from it), copied onto `rule` when given. */
function countsOf(fields: Fields, path: string, rule: Record<string, unknown>): void {
  if (fields.counts !== undefined) rule.counts = oneOf(fields.counts, `${path}.counts`, ['requests', 'cost']);
}
