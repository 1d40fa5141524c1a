/**
 * The real OpenTelemetry metrics SDK for telemetry tests: a meter provider with a pull reader, and
 * the data points of one instrument read from a collection as plain `{ attributes, value }`.
 */
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';

class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

export interface Sdk {
  readonly provider: MeterProvider;
  /** One collection, as the SDK exports it. */
  collect(): Promise<ResourceMetrics>;
}

export function createSdk(): Sdk {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length > 0) throw errors[0];
      return resourceMetrics;
    },
  };
}

export interface Point<T = number> {
  attributes: Record<string, unknown>;
  value: T;
}

/** The instrument's descriptor and data points in a collection (empty when it has none). */
export function pointsOf<T = number>(
  metrics: ResourceMetrics,
  name: string,
): { unit: string | undefined; points: Point<T>[] } {
  for (const scope of metrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== name) continue;
      return {
        unit: metric.descriptor.unit,
        points: (metric.dataPoints as DataPoint<unknown>[]).map((point) => ({
          attributes: { ...point.attributes },
          value: point.value as T,
        })),
      };
    }
  }
  return { unit: undefined, points: [] };
}

/** Each data point's value by a label made of the given attributes' values ('a|b'). */
export function valuesBy(points: Point[], ...attributes: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const point of points) out[attributes.map((name) => point.attributes[name]).join('|')] = point.value;
  return out;
}

export type HistogramPoint = Point<Histogram>;
