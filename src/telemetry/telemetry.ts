/**
 * What a limiter records about its checks: OpenTelemetry metrics through a `meter`
 * (metrics.ts) and the keys it checks and denies most (`topKeys`, heavy-hitters.ts). Options
 * are validated here; the check path gets one function, or none when both are off.
 */
import type { Decision } from '../core/decision.js';
import { describe } from '../describe.js';
import { checkOptions } from '../options.js';
import { positiveInteger } from '../rules.js';
import { createHeavyHitters, type HeavyHitters, type TopBy } from './heavy-hitters.js';
import type { SlotSource } from './instruments.js';
import { resolveMeter } from './meter.js';
import { createLimiterMetrics, type LimiterMetrics } from './metrics.js';
import type { TopEntry } from './space-saving.js';

export interface TopOptions {
  /** `'denied'` (default): the keys denied most, shadow rules' would-be denials included; `'checked'`: checked most. */
  by?: TopBy;
  /** How many keys, most first: 1 to `topKeys`, default 10. */
  limit?: number;
  /** Reserved for the whole fleet's keys (merged in the store); `true` is not supported yet and rejects. Default `false`. */
  fleet?: boolean;
}

export interface TelemetryOptions {
  meter: unknown;
  topKeys: unknown;
  prefix: string;
  clock: () => number;
  /** Concurrency rules' names and the slots held now, when the limiter has such rules. */
  slots: { rules: readonly string[]; inUse(visit: (rule: string, slots: number) => void): void } | undefined;
}

export interface Telemetry {
  /** Every check's decision (`cached`: answered by the deny cache), or undefined when nothing is recorded. */
  readonly decided: ((key: string, decision: Decision, cached: boolean) => void) | undefined;
  readonly metrics: LimiterMetrics | undefined;
  top(options: TopOptions | undefined): TopEntry[];
}

/** Counters per sketch by default; a bound that keeps a sketch in a few hundred kilobytes. */
const DEFAULT_TOP_KEYS = 1000;
const MAX_TOP_KEYS = 100_000;
const TOP_OPTIONS = new Set(['by', 'limit', 'fleet']);

export function createTelemetry(options: TelemetryOptions): Telemetry {
  const meter = resolveMeter(options.meter, 'meter');
  const topKeys = resolveTopKeys(options.topKeys);
  const { slots } = options;
  const source: SlotSource | undefined =
    slots === undefined
      ? undefined
      : (observe) => {
          for (const rule of slots.rules) observe(rule, 0);
          slots.inUse(observe);
        };
  const metrics = meter === undefined ? undefined : createLimiterMetrics(meter, options.prefix, source);
  const hitters: HeavyHitters | undefined =
    topKeys === 0 ? undefined : createHeavyHitters(topKeys, options.clock);

  let decided: Telemetry['decided'];
  if (metrics !== undefined && hitters !== undefined) {
    decided = (key, decision, cached) => {
      metrics.decided(decision, cached);
      hitters.offer(key, !decision.allowed || decision.shadowDenied.length > 0);
    };
  } else if (metrics !== undefined) {
    decided = (_key, decision, cached) => metrics.decided(decision, cached);
  } else if (hitters !== undefined) {
    decided = (key, decision) => hitters.offer(key, !decision.allowed || decision.shadowDenied.length > 0);
  }

  return {
    decided,
    metrics,
    top(topOptions) {
      const { by, limit, fleet } = resolveTopOptions(topOptions, topKeys);
      // Refused rather than answered with this process's keys, which would read as the fleet's.
      if (fleet)
        throw new RangeError('top: fleet: true is not supported yet; omit it for the keys this limiter saw');
      if (hitters === undefined) {
        throw new RangeError('top: this limiter keeps no heavy hitters (topKeys: 0); give topKeys a size');
      }
      return hitters.top(by, limit);
    },
  };
}

function resolveTopKeys(value: unknown): number {
  if (value === undefined) return DEFAULT_TOP_KEYS;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_TOP_KEYS) {
    throw new RangeError(`topKeys: ${describe(value)} must be an integer from 0 (off) to ${MAX_TOP_KEYS}`);
  }
  return value;
}

export function resolveTopOptions(
  options: TopOptions | undefined,
  topKeys: number,
): { by: TopBy; limit: number; fleet: boolean } {
  if (options === undefined) return { by: 'denied', limit: Math.min(10, topKeys), fleet: false };
  checkOptions(options, { owner: 'top options', expected: '{ by?, limit?, fleet? }', known: TOP_OPTIONS });
  const by = options.by ?? 'denied';
  if (by !== 'denied' && by !== 'checked') {
    throw new RangeError(`top: by: ${describe(by)} must be 'denied' or 'checked'`);
  }
  const limit =
    options.limit === undefined
      ? Math.min(10, topKeys)
      : positiveInteger(options.limit, 'top: limit', Math.max(1, topKeys));
  const fleet = options.fleet ?? false;
  if (typeof fleet !== 'boolean') throw new TypeError(`top: fleet: ${describe(fleet)} must be true or false`);
  return { by, limit, fleet };
}
