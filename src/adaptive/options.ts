/**
 * The adaptive limit's public options, validated once at construction: every error names the
 * option and the range it accepts.
 */
import { describe } from '../describe.js';
import { type Duration, parseDuration } from '../duration.js';
import { checkOptions } from '../options.js';
import { positiveInteger } from '../rules.js';

/** How much a request matters when the upstream is under pressure: sheddable goes first, critical last. */
export type Criticality = 'critical' | 'standard' | 'sheddable';

export const CRITICALITIES: readonly Criticality[] = ['critical', 'standard', 'sheddable'];

export interface AdaptiveLimitOptions {
  /** The lowest the limit goes, however slow the upstream (the last line of defence). Default 1. */
  min?: number;
  /** The highest the limit goes. Default 1,000. */
  max?: number;
  /** The limit before anything is measured. Default 20 (within min and max). */
  initial?: number;
  /** Latencies are gathered over this window, then the limit moves once. Default `'250ms'`. */
  window?: Duration;
  /** Share of the way to the window's new limit the limit moves each window, in (0, 1]. Default 0.5. */
  smoothing?: number;
  /**
   * Latency the upstream may add over its no-load latency before the limit shrinks, as a
   * fraction of the no-load latency, 0 to 10. Default 0.25.
   */
  tolerance?: number;
  /** Which latency of a window is compared: a percentile from 1 to 99. Default 50. */
  percentile?: number;
  /** How often the no-load latency is measured again; each time jittered by ±`probeJitter`. Default `'1m'`. */
  probeInterval?: Duration;
  /** Share of `probeInterval` each probe is moved by at random, 0 to 0.5, so gateways do not probe together. Default 0.15. */
  probeJitter?: number;
  /**
   * The concurrency a probe holds the upstream to while it measures the no-load latency (or the
   * limit, when that is lower). Apart from `min`: a probe wants it as high as accuracy allows.
   * Default 4.
   */
  probeConcurrency?: number;
  /** Latencies a probe gathers before it ends (it also ends after 4 windows). Default 25. */
  probeSamples?: number;
  /** Share of the limit held for critical requests only, 0 to 0.9. Default 0.2. */
  criticalReserve?: number;
  /** Share of the limit, above what sheddable requests may use, held for standard and critical, 0 to 0.9. Default 0.1. */
  standardReserve?: number;
  /** What a window with a dropped request (`dropped()`: a timeout, an overload answer) multiplies the limit by, in (0, 1). Default 0.9. */
  backoff?: number;
  /**
   * Event-loop utilization (0 to 1) above which the limit does not grow: a saturated process
   * measures its own delays, not the upstream's. `false` turns it off. Default 0.95.
   */
  eventLoop?: number | false;
  /** Milliseconds since the epoch; inject one in tests and simulations. Default `performance.now` based. */
  clock?: () => number;
  /** A random number in [0, 1) for the probe's jitter; inject one for repeatable runs. Default `Math.random`. */
  random?: () => number;
}

export interface ResolvedAdaptiveOptions {
  readonly min: number;
  readonly max: number;
  readonly initial: number;
  readonly windowMs: number;
  readonly smoothing: number;
  readonly tolerance: number;
  readonly percentile: number;
  readonly probeIntervalMs: number;
  readonly probeJitter: number;
  readonly probeConcurrency: number;
  readonly probeSamples: number;
  readonly criticalReserve: number;
  readonly standardReserve: number;
  readonly backoff: number;
  readonly eventLoop: number | false;
  readonly clock: () => number;
  readonly random: () => number;
}

const OWNER = 'createAdaptiveLimit';
/** The options that tune the limit (all but the injected clock and random source). */
export const TUNING_OPTIONS = [
  'min',
  'max',
  'initial',
  'window',
  'smoothing',
  'tolerance',
  'percentile',
  'probeInterval',
  'probeJitter',
  'probeConcurrency',
  'probeSamples',
  'criticalReserve',
  'standardReserve',
  'backoff',
  'eventLoop',
] as const;
const KNOWN = new Set<string>([...TUNING_OPTIONS, 'clock', 'random']);

const MAX_LIMIT = 1_000_000;

/** A number within [low, high] (or (low, high] / [low, high) where `open` says), else a RangeError naming the option. */
function fraction(
  value: unknown,
  option: string,
  low: number,
  high: number,
  fallback: number,
  open: { low?: boolean; high?: boolean } = {},
): number {
  if (value === undefined) return fallback;
  const below = open.low === true ? (value as number) <= low : (value as number) < low;
  const above = open.high === true ? (value as number) >= high : (value as number) > high;
  if (typeof value !== 'number' || !Number.isFinite(value) || below || above) {
    const range = `${open.low === true ? '(' : '['}${low}, ${high}${open.high === true ? ')' : ']'}`;
    throw new RangeError(`${OWNER}: ${option}: ${describe(value)} must be a number in ${range}`);
  }
  return value;
}

function fn<T>(value: unknown, option: string, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'function')
    throw new TypeError(`${OWNER}: ${option}: ${describe(value)} must be a function`);
  return value as T;
}

const monotonicClock = (): number => performance.timeOrigin + performance.now();

/** Validates `options` into the resolved form the controller trusts. */
export function resolveAdaptiveOptions(options: AdaptiveLimitOptions = {}): ResolvedAdaptiveOptions {
  checkOptions(options, { owner: OWNER, expected: 'an options object', known: KNOWN, rejectArrays: true });
  const min = options.min === undefined ? 1 : positiveInteger(options.min, `${OWNER}: min`, MAX_LIMIT);
  const max =
    options.max === undefined
      ? Math.max(min, 1_000)
      : positiveInteger(options.max, `${OWNER}: max`, MAX_LIMIT);
  if (max < min) throw new RangeError(`${OWNER}: max: ${max} must be at least min (${min})`);
  const initial =
    options.initial === undefined
      ? Math.min(max, Math.max(min, 20))
      : positiveInteger(options.initial, `${OWNER}: initial`, MAX_LIMIT);
  if (initial < min || initial > max) {
    throw new RangeError(`${OWNER}: initial: ${initial} must be from min (${min}) to max (${max})`);
  }
  const criticalReserve = fraction(options.criticalReserve, 'criticalReserve', 0, 0.9, 0.2);
  const standardReserve = fraction(options.standardReserve, 'standardReserve', 0, 0.9, 0.1);
  if (criticalReserve + standardReserve > 0.9) {
    throw new RangeError(
      `${OWNER}: criticalReserve + standardReserve: ${criticalReserve + standardReserve} must be at most 0.9 (sheddable requests need a share)`,
    );
  }
  const eventLoop =
    options.eventLoop === false ? false : fraction(options.eventLoop, 'eventLoop', 0, 1, 0.95, { low: true });
  const percentile = fraction(options.percentile, 'percentile', 1, 99, 50);
  return {
    min,
    max,
    initial,
    windowMs: options.window === undefined ? 250 : parseDuration(options.window, `${OWNER}: window`),
    smoothing: fraction(options.smoothing, 'smoothing', 0, 1, 0.5, { low: true }),
    tolerance: fraction(options.tolerance, 'tolerance', 0, 10, 0.25),
    percentile,
    probeIntervalMs:
      options.probeInterval === undefined
        ? 60_000
        : parseDuration(options.probeInterval, `${OWNER}: probeInterval`),
    probeJitter: fraction(options.probeJitter, 'probeJitter', 0, 0.5, 0.15),
    probeConcurrency:
      options.probeConcurrency === undefined
        ? 4
        : positiveInteger(options.probeConcurrency, `${OWNER}: probeConcurrency`, MAX_LIMIT),
    probeSamples:
      options.probeSamples === undefined
        ? 25
        : positiveInteger(options.probeSamples, `${OWNER}: probeSamples`, 10_000),
    criticalReserve,
    standardReserve,
    backoff: fraction(options.backoff, 'backoff', 0, 1, 0.9, { low: true, high: true }),
    eventLoop,
    clock: fn(options.clock, 'clock', monotonicClock),
    random: fn(options.random, 'random', Math.random),
  };
}
