/**
 * Bottleneck's options, resolved once: its defaults, a clear error for a value out of range, and
 * the scheduler rules they become (maxConcurrent a concurrency rule counting weight, minTime a
 * GCRA rule of one start per minTime). Unknown options are ignored, as Bottleneck ignores them
 * (a Group hands its own options to every limiter it makes).
 */
import { describe } from '../describe.js';
import type { RuleOptions } from '../rules.js';
import { BottleneckError } from './errors.js';

export const STRATEGY = { LEAK: 1, OVERFLOW: 2, OVERFLOW_PRIORITY: 4, BLOCK: 3 } as const;

/** The options that shape limits (Bottleneck's "store" options; `updateSettings` changes them). */
export interface LimitSettings {
  maxConcurrent: number | null;
  minTime: number;
  highWater: number | null;
  strategy: number;
  penalty: number | null;
  reservoir: number | null;
  reservoirRefreshInterval: number | null;
  reservoirRefreshAmount: number | null;
  reservoirIncreaseInterval: number | null;
  reservoirIncreaseAmount: number | null;
  reservoirIncreaseMaximum: number | null;
}

const LIMIT_DEFAULTS: LimitSettings = {
  maxConcurrent: null,
  minTime: 0,
  highWater: null,
  strategy: STRATEGY.LEAK,
  penalty: null,
  reservoir: null,
  reservoirRefreshInterval: null,
  reservoirRefreshAmount: null,
  reservoirIncreaseInterval: null,
  reservoirIncreaseAmount: null,
  reservoirIncreaseMaximum: null,
};

/** Options that may be null (no limit); the rest are numbers. */
const NULLABLE = new Set<keyof LimitSettings>([
  'maxConcurrent',
  'highWater',
  'penalty',
  'reservoir',
  'reservoirRefreshInterval',
  'reservoirRefreshAmount',
  'reservoirIncreaseInterval',
  'reservoirIncreaseAmount',
  'reservoirIncreaseMaximum',
]);
/** Intervals must be at least 1 ms (a timer runs at each). */
const INTERVALS = new Set<keyof LimitSettings>(['reservoirRefreshInterval', 'reservoirIncreaseInterval']);

/** A job's options, in Bottleneck's key order (event listeners see them). */
export interface JobOptions {
  priority: number;
  weight: number;
  expiration: number | null;
  id: string;
}

export const NO_ID = '<no-id>';
const DEFAULT_PRIORITY = 5;

function checkNumber(name: string, value: unknown, nullable: boolean, min: number): void {
  if (value == null && nullable) return;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    throw new RangeError(
      `${name}: ${describe(value)} must be a number from ${min}${nullable ? ' or null (no limit)' : ''}`,
    );
  }
}

/** Takes the limit options present in `options` over `base`, validating each. */
export function mergeLimits(base: LimitSettings, options: Record<string, unknown>): LimitSettings {
  const merged = { ...base };
  for (const name of Object.keys(LIMIT_DEFAULTS) as (keyof LimitSettings)[]) {
    if (!(name in options) || options[name] === undefined) continue;
    const value = options[name];
    if (name === 'strategy') {
      if (!Object.values(STRATEGY).includes(value as never)) {
        throw new RangeError(
          `strategy: ${describe(value)} must be one of Bottleneck.strategy's values (1 to 4)`,
        );
      }
    } else {
      checkNumber(name, value, NULLABLE.has(name), INTERVALS.has(name) ? 1 : 0);
    }
    (merged as Record<string, unknown>)[name] = value;
  }
  const { maxConcurrent } = merged;
  if (
    maxConcurrent !== null &&
    (!Number.isInteger(maxConcurrent) || maxConcurrent < 1 || maxConcurrent > UNLIMITED)
  ) {
    throw new RangeError(
      `maxConcurrent: ${maxConcurrent} must be an integer from 1 to ${UNLIMITED}, or null (no limit)`,
    );
  }
  return merged;
}

export function resolveLimits(options: Record<string, unknown>): LimitSettings {
  return mergeLimits(LIMIT_DEFAULTS, options);
}

/**
 * The scheduler's rules: the slots a job holds (always a rule, so a later maxConcurrent has
 * slots to count), and on a shared store minTime's spacing. A limiter of its own spaces starts
 * itself, as Bottleneck does: a job takes its slot first and waits out minTime holding it.
 */
export function limitRules(limits: LimitSettings, leaseMs: number, shared: boolean): RuleOptions[] {
  const rules: RuleOptions[] = [
    {
      name: 'maxConcurrent',
      algorithm: 'concurrency',
      limit: limits.maxConcurrent ?? UNLIMITED,
      lease: leaseMs,
    },
  ];
  if (shared && limits.minTime > 0) {
    rules.push({
      name: 'minTime',
      algorithm: 'gcra',
      limit: 1,
      window: Math.ceil(limits.minTime),
      counts: 'requests',
    });
  }
  return rules;
}

/** maxConcurrent null: a concurrency rule's most slots (one rule always holds slots, so a later maxConcurrent has them to count). */
const UNLIMITED = 10_000;

/** Bottleneck's penalty for BLOCK: `penalty`, else 15 × minTime, else 5 s. */
export function penaltyOf(limits: LimitSettings): number {
  return limits.penalty ?? (15 * limits.minTime || 5000);
}

/** A job's options over the defaults; a priority out of 0-9 is clamped, a fraction made 5. */
export function resolveJobOptions(given: unknown): JobOptions {
  const options = (given ?? {}) as Record<string, unknown>;
  const raw = options.priority ?? DEFAULT_PRIORITY;
  const whole = (raw as number) | 0;
  const priority = whole !== raw ? DEFAULT_PRIORITY : Math.min(9, Math.max(0, whole));
  const weight = options.weight ?? 1;
  if (typeof weight !== 'number' || !Number.isSafeInteger(weight) || weight < 0) {
    throw new BottleneckError(`weight: ${describe(weight)} must be a whole number from 0`);
  }
  const expiration = options.expiration ?? null;
  if (expiration !== null && (typeof expiration !== 'number' || !(expiration >= 0))) {
    throw new BottleneckError(`expiration: ${describe(expiration)} must be a number of ms from 0, or null`);
  }
  const id = options.id ?? NO_ID;
  return {
    priority,
    weight,
    expiration,
    // Kept as given (a number stays a number), as Bottleneck keys its job states.
    id: id === NO_ID ? `${NO_ID}-${Math.random().toString(36).slice(2)}` : (id as string),
  };
}
