/**
 * Floodgate's instruments on one meter, shared by every limiter that records through it: created
 * once per meter (the same names twice would be a duplicate registration), with counts kept as
 * plain integers per attribute set and handed to the counters when the meter collects. An
 * OpenTelemetry SDK hashes the attributes of every `add`, which costs more than a whole check on
 * the memory store; the SDK runs observable callbacks before it reads its counters, so a
 * collection still sees every count made before it.
 */
import type {
  CounterLike,
  HistogramLike,
  MeterAttributes,
  MeterLike,
  ObservableResultLike,
} from './meter.js';

/** A count waiting for the next collection: `pending++` is all a check pays. */
export interface Tally {
  pending: number;
  readonly counter: CounterLike;
  readonly attributes: MeterAttributes;
}

export type CountedInstrument = 'decisions' | 'denyCacheHits' | 'leaseSlices';

/** Reports a limiter's slots held now, per rule (every rule that can hold slots, 0 included). */
export type SlotSource = (observe: (rule: string, held: number) => void) => void;

export interface Instruments {
  /** The tally of one attribute set; past MAX_SERIES sets, the instrument's overflow tally. */
  tally(instrument: CountedInstrument, attributes: MeterAttributes): Tally;
  readonly storeDuration: HistogramLike;
  readonly storeErrors: CounterLike;
  /** Adds a limiter's slots to the gauge under its prefix; the returned function removes them. */
  addSlots(prefix: string, source: SlotSource): () => void;
}

/** Attribute sets per meter: a bound against rule names without end (overrides set at run time). */
export const MAX_SERIES = 2000;
/** OpenTelemetry's attribute for the series that takes every count past a cardinality limit. */
const OVERFLOW: MeterAttributes = Object.freeze({ 'otel.metric.overflow': 'true' });
/**
 * Seconds: 100 µs to 1 s. A memory-adjacent Redis answers in well under a millisecond, which
 * OpenTelemetry's default boundaries (from 5 ms) would put in one bucket.
 */
export const STORE_DURATION_BOUNDARIES = [
  0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

const byMeter = new WeakMap<MeterLike, Instruments>();

/** The meter's instruments, created on first use. */
export function instrumentsOf(meter: MeterLike): Instruments {
  let instruments = byMeter.get(meter);
  if (instruments === undefined) {
    instruments = createInstruments(meter);
    byMeter.set(meter, instruments);
  }
  return instruments;
}

function createInstruments(meter: MeterLike): Instruments {
  const counters: Record<CountedInstrument, CounterLike> = {
    decisions: meter.createCounter('floodgate.decisions', {
      description: 'Rate-limit checks decided, once each, by limiter prefix, deciding rule and outcome.',
      unit: '{decision}',
    }),
    denyCacheHits: meter.createCounter('floodgate.deny_cache.hits', {
      description: 'Checks answered by the local deny cache, without a store call.',
      unit: '{check}',
    }),
    leaseSlices: meter.createCounter('floodgate.lease.slices', {
      description: 'Quota slices taken from the store, and slices given back with unused units.',
      unit: '{slice}',
    }),
  };
  const storeDuration = meter.createHistogram('floodgate.store.duration', {
    description: 'Duration of one store call (a Redis script call), by operation.',
    unit: 's',
    advice: { explicitBucketBoundaries: STORE_DURATION_BOUNDARIES },
  });
  const storeErrors = meter.createCounter('floodgate.store.errors', {
    description: 'Store calls that failed or timed out, by error type.',
    unit: '{error}',
  });
  const slotsGauge = meter.createObservableGauge('floodgate.concurrency.slots', {
    description:
      "Concurrency slots held by the admitted checks of this limiter's instance, by limiter prefix and rule.",
    unit: '{slot}',
  });

  const tallies = new Map<string, Tally>();
  const overflow = new Map<CountedInstrument, Tally>();
  const sources = new Map<SlotSource, string>();
  // Every (prefix, rule) ever reported stays: a slot released, or a limiter closed, reads 0.
  const slotSeries = new Map<string, { attributes: MeterAttributes; held: number }>();

  function tally(instrument: CountedInstrument, attributes: MeterAttributes): Tally {
    const id = `${instrument}\n${Object.values(attributes).join('\n')}`;
    let found = tallies.get(id);
    if (found !== undefined) return found;
    if (tallies.size >= MAX_SERIES) {
      found = overflow.get(instrument);
      if (found === undefined) {
        found = { pending: 0, counter: counters[instrument], attributes: OVERFLOW };
        overflow.set(instrument, found);
      }
      return found;
    }
    found = { pending: 0, counter: counters[instrument], attributes: Object.freeze({ ...attributes }) };
    tallies.set(id, found);
    return found;
  }

  function flush(entry: Tally): void {
    if (entry.pending === 0) return;
    const value = entry.pending;
    entry.pending = 0;
    entry.counter.add(value, entry.attributes);
  }

  slotsGauge.addCallback(function collectFloodgate(result: ObservableResultLike) {
    for (const entry of tallies.values()) flush(entry);
    for (const entry of overflow.values()) flush(entry);
    for (const series of slotSeries.values()) series.held = 0;
    for (const [source, prefix] of sources) {
      source((rule, held) => {
        const id = `${prefix}\n${rule}`;
        let series = slotSeries.get(id);
        if (series === undefined) {
          if (slotSeries.size >= MAX_SERIES) return;
          series = {
            attributes: Object.freeze({ 'floodgate.prefix': prefix, 'floodgate.rule': rule }),
            held: 0,
          };
          slotSeries.set(id, series);
        }
        series.held += held;
      });
    }
    for (const series of slotSeries.values()) result.observe(series.held, series.attributes);
  });

  return {
    tally,
    storeDuration,
    storeErrors,
    addSlots(prefix, source) {
      sources.set(source, prefix);
      return () => {
        sources.delete(source);
      };
    },
  };
}
