/**
 * The part of an OpenTelemetry `Meter` (`metrics.getMeter(...)` from `@opentelemetry/api`) the
 * limiter uses, typed structurally so the library needs no runtime dependency on the API package.
 * A library takes a meter and never configures providers or exporters.
 */
import { describe } from '../describe.js';

/** Attribute values are bounded: a prefix, a rule name, an outcome, never a key. */
export type MeterAttributes = Readonly<Record<string, string>>;

export interface CounterLike {
  add(value: number, attributes?: MeterAttributes): void;
}

export interface HistogramLike {
  record(value: number, attributes?: MeterAttributes): void;
}

export interface ObservableResultLike {
  observe(value: number, attributes?: MeterAttributes): void;
}

export interface ObservableGaugeLike {
  addCallback(callback: (result: ObservableResultLike) => void | Promise<void>): void;
}

export interface InstrumentOptionsLike {
  description?: string;
  unit?: string;
  advice?: { explicitBucketBoundaries?: number[] };
}

/** An OpenTelemetry `Meter`, or anything with these three methods. */
export interface MeterLike {
  createCounter(name: string, options?: InstrumentOptionsLike): CounterLike;
  createHistogram(name: string, options?: InstrumentOptionsLike): HistogramLike;
  createObservableGauge(name: string, options?: InstrumentOptionsLike): ObservableGaugeLike;
}

/** Validates the `meter` option: undefined (no metrics) or an object with the three factories. */
export function resolveMeter(meter: unknown, option: string): MeterLike | undefined {
  if (meter === undefined) return undefined;
  const candidate = meter as Partial<MeterLike> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.createCounter !== 'function' ||
    typeof candidate.createHistogram !== 'function' ||
    typeof candidate.createObservableGauge !== 'function'
  ) {
    throw new TypeError(
      `${option}: expected an OpenTelemetry Meter (metrics.getMeter('my-service') from @opentelemetry/api) with createCounter, createHistogram and createObservableGauge, got ${describe(meter)}`,
    );
  }
  return candidate as MeterLike;
}
