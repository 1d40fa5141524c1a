/**
 * What a limiter records about its checks: OpenTelemetry metrics through a `meter`
 * (metrics.ts) and the keys it checks and denies most (`topKeys`, heavy-hitters.ts), merged into
 * the fleet's on a store that keeps them (fleet.ts). Options are validated here; the check path
 * gets one function, or none when everything is off.
 */
import type { Decision } from '../core/decision.js';
import { describe } from '../describe.js';
import { parseDuration } from '../duration.js';
import { checkOptions } from '../options.js';
import { formatDuration, positiveInteger } from '../rules.js';
import type { FleetSketches } from '../stores/types.js';
import { createFleet, type Fleet } from './fleet.js';
import { boundedKey, createHeavyHitters, type TopBy } from './heavy-hitters.js';
import type { SlotSource } from './instruments.js';
import { resolveMeter } from './meter.js';
import { createLimiterMetrics, type LimiterMetrics } from './metrics.js';
import type { TopEntry } from './space-saving.js';

export interface TopOptions {
  /** `'denied'` (default): the keys denied most, shadow rules' would-be denials included; `'checked'`: checked most. */
  by?: TopBy;
  /** How many keys, most first: 1 to `topKeys`, default 10. */
  limit?: number;
  /**
   * `true`: the keys of every process on the store (merged into it every `fleetInterval`), not
   * only this one's; on a store that keeps no fleet sketches (the memory store), this process's.
   * Default `false`.
   */
  fleet?: boolean;
}

export interface TelemetryOptions {
  meter: unknown;
  topKeys: unknown;
  fleetInterval: unknown;
  prefix: string;
  clock: () => number;
  /** The store's fleet sketches, when it keeps them; the limiter's timeout bounds the last merge. */
  sketches: FleetSketches | undefined;
  timeoutMs: number;
  /** A merge into the store failed. */
  failed(error: unknown): void;
  /** Concurrency rules' names and the slots held now, when the limiter has such rules. */
  slots: { rules: readonly string[]; inUse(visit: (rule: string, slots: number) => void): void } | undefined;
}

export interface Telemetry {
  /** Every check's decision (`cached`: answered by the deny cache), or undefined when nothing is recorded. */
  readonly decided: ((key: string, decision: Decision, cached: boolean) => void) | undefined;
  readonly metrics: LimiterMetrics | undefined;
  top(options: TopOptions | undefined): TopEntry[] | Promise<TopEntry[]>;
  /** Stops merging into the fleet's sketches, after a last merge. */
  close(): Promise<void>;
}

/** Counters per sketch by default; a bound that keeps a sketch in a few hundred kilobytes. */
const DEFAULT_TOP_KEYS = 1000;
const MAX_TOP_KEYS = 100_000;
const TOP_OPTIONS = new Set(['by', 'limit', 'fleet']);
/** Merges into the fleet's sketches: often enough that a key shows everywhere within 30 s. */
const DEFAULT_FLEET_INTERVAL_MS = 5000;
const MIN_FLEET_INTERVAL_MS = 10;
const MAX_FLEET_INTERVAL_MS = 20_000;

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
  const hitters = topKeys === 0 ? undefined : createHeavyHitters(topKeys, options.clock);
  const fleetIntervalMs = resolveFleetInterval(options.fleetInterval);
  const fleet: Fleet | undefined =
    hitters === undefined || options.sketches === undefined
      ? undefined
      : createFleet({
          sketches: options.sketches,
          prefix: options.prefix,
          capacity: topKeys,
          intervalMs: fleetIntervalMs,
          timeoutMs: options.timeoutMs,
          failed: options.failed,
        });

  let offer: ((key: string, denied: boolean) => void) | undefined;
  if (hitters !== undefined) {
    offer =
      fleet === undefined
        ? (key, denied) => hitters.offer(boundedKey(key), denied)
        : (key, denied) => {
            const kept = boundedKey(key);
            hitters.offer(kept, denied);
            fleet.offer(kept, denied);
          };
  }
  const deniedOf = (decision: Decision) => !decision.allowed || decision.shadowDenied.length > 0;

  let decided: Telemetry['decided'];
  if (metrics !== undefined && offer !== undefined) {
    const counted = offer;
    decided = (key, decision, cached) => {
      metrics.decided(decision, cached);
      counted(key, deniedOf(decision));
    };
  } else if (metrics !== undefined) {
    decided = (_key, decision, cached) => metrics.decided(decision, cached);
  } else if (offer !== undefined) {
    const counted = offer;
    decided = (key, decision) => counted(key, deniedOf(decision));
  }

  return {
    decided,
    metrics,
    top(topOptions) {
      const { by, limit, fleet: whole } = resolveTopOptions(topOptions, topKeys);
      if (hitters === undefined) {
        throw new RangeError('top: this limiter keeps no heavy hitters (topKeys: 0); give topKeys a size');
      }
      // Without fleet sketches in the store, this process is the whole fleet.
      if (whole && fleet !== undefined) return fleet.top(by, limit);
      return hitters.top(by, limit);
    },
    close: async () => fleet?.close(),
  };
}

/** Validates `fleetInterval`: a duration from 10 ms to 20 s, default 5 s. */
function resolveFleetInterval(value: unknown): number {
  if (value === undefined) return DEFAULT_FLEET_INTERVAL_MS;
  const ms = parseDuration(value, 'fleetInterval');
  if (ms < MIN_FLEET_INTERVAL_MS || ms > MAX_FLEET_INTERVAL_MS) {
    throw new RangeError(
      `fleetInterval: ${describe(value)} must be from ${formatDuration(MIN_FLEET_INTERVAL_MS)} to ${formatDuration(MAX_FLEET_INTERVAL_MS)}`,
    );
  }
  return ms;
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
