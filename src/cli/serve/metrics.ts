/**
 * A tiny Prometheus registry (text exposition format 0.0.4): counters, gauges and histograms
 * with labels, and nothing else. The gateway's metric names are declared in one place below.
 */

type Labels = Record<string, string>;

export interface Series {
  labels: Labels;
  value: number;
}

export interface HistogramSeries {
  labels: Labels;
  counts: number[];
  sum: number;
  count: number;
}

export interface Counter {
  inc(labels?: Labels, by?: number): void;
  /** Every series and its value now (for the admin listener's live page). */
  series(): readonly Series[];
}

export interface Gauge {
  set(value: number, labels?: Labels): void;
  add(by: number, labels?: Labels): void;
  series(): readonly Series[];
}

export interface Histogram {
  observe(value: number, labels?: Labels): void;
  /** Every series: its count per bucket (not cumulative), sum and count. */
  series(): readonly HistogramSeries[];
  readonly buckets: readonly number[];
}

export interface Registry {
  counter(name: string, help: string): Counter;
  gauge(name: string, help: string): Gauge;
  histogram(name: string, help: string, buckets: readonly number[]): Histogram;
  /** The exposition text. */
  render(): string;
}

export function createRegistry(): Registry {
  const renderers: (() => string)[] = [];

  function header(name: string, help: string, type: string): string {
    return `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} ${type}\n`;
  }

  function scalar(name: string, help: string, type: 'counter' | 'gauge') {
    const series = new Map<string, Series>();
    const get = (labels: Labels) => {
      const id = labelText(labels);
      let entry = series.get(id);
      if (entry === undefined) {
        entry = { labels, value: 0 };
        series.set(id, entry);
      }
      return entry;
    };
    renderers.push(() => {
      let text = header(name, help, type);
      for (const [id, entry] of series) text += `${name}${id} ${formatNumber(entry.value)}\n`;
      return text;
    });
    return { get, series: () => [...series.values()] };
  }

  return {
    counter(name, help) {
      const { get, series } = scalar(name, help, 'counter');
      return {
        inc(labels = {}, by = 1) {
          get(labels).value += by;
        },
        series,
      };
    },
    gauge(name, help) {
      const { get, series } = scalar(name, help, 'gauge');
      return {
        set(value, labels = {}) {
          get(labels).value = value;
        },
        add(by, labels = {}) {
          get(labels).value += by;
        },
        series,
      };
    },
    histogram(name, help, buckets) {
      const series = new Map<string, HistogramSeries>();
      renderers.push(() => {
        let text = header(name, help, 'histogram');
        for (const entry of series.values()) {
          let cumulative = 0;
          buckets.forEach((bound, i) => {
            cumulative += entry.counts[i] as number;
            text += `${name}_bucket${labelText({ ...entry.labels, le: formatNumber(bound) })} ${cumulative}\n`;
          });
          text += `${name}_bucket${labelText({ ...entry.labels, le: '+Inf' })} ${entry.count}\n`;
          text += `${name}_sum${labelText(entry.labels)} ${formatNumber(entry.sum)}\n`;
          text += `${name}_count${labelText(entry.labels)} ${entry.count}\n`;
        }
        return text;
      });
      return {
        buckets,
        series: () => [...series.values()],
        observe(value, labels = {}) {
          const id = labelText(labels);
          let entry = series.get(id);
          if (entry === undefined) {
            entry = { labels, counts: buckets.map(() => 0), sum: 0, count: 0 };
            series.set(id, entry);
          }
          const index = buckets.findIndex((bound) => value <= bound);
          if (index >= 0) entry.counts[index] = (entry.counts[index] as number) + 1;
          entry.sum += value;
          entry.count++;
        },
      };
    },
    render() {
      return renderers.map((render) => render()).join('');
    },
  };
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return '';
  return `{${entries
    .map(
      ([key, value]) => `${key}="${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
    )
    .join(',')}}`;
}

function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(12)));
}

/** The gateway's metrics. Names and labels are documented in the README (the floodgate command, Metrics). */
export function gatewayMetrics(registry: Registry = createRegistry()) {
  return {
    registry,
    decisions: registry.counter(
      'floodgate_decisions_total',
      'Rate-limit decisions by route, plan, binding rule and outcome (allowed or denied).',
    ),
    shadowDenied: registry.counter(
      'floodgate_shadow_denied_total',
      'Requests a shadow rule would have denied (allowed, since shadow rules never deny), by route, plan and rule.',
    ),
    degraded: registry.counter(
      'floodgate_degraded_decisions_total',
      'Decisions answered by the onStoreError policy because the store failed, timed out or was cut off, by reason.',
    ),
    rlsDecisions: registry.counter(
      'floodgate_rls_decisions_total',
      'Envoy rate limit service decisions per descriptor, by domain, configured descriptor and outcome (ok, over_limit, shadow_over_limit, unlimited, no_limit).',
    ),
    storeLatency: registry.histogram(
      'floodgate_store_latency_seconds',
      'Time of one store call (one Redis script call), by store and operation.',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    ),
    storeErrors: registry.counter('floodgate_store_errors_total', 'Store calls that failed or timed out.'),
    requests: registry.counter(
      'floodgate_http_requests_total',
      'Requests answered by the gateway, by route and status code.',
    ),
    upstreamErrors: registry.counter(
      'floodgate_upstream_errors_total',
      'Requests the upstream could not answer (502/503/504), by reason.',
    ),
    adaptiveLimit: registry.gauge(
      'floodgate_adaptive_limit',
      'The adaptive concurrency limit in front of the upstream (--adaptive).',
    ),
    adaptiveInFlight: registry.gauge(
      'floodgate_adaptive_in_flight',
      'Requests let through by the adaptive limit and not yet answered.',
    ),
    adaptiveShed: registry.counter(
      'floodgate_adaptive_shed_total',
      'Requests the adaptive limit refused (503), by criticality.',
    ),
    adaptiveLatency: registry.gauge(
      'floodgate_adaptive_latency_seconds',
      "The upstream's latency as the adaptive limit measures it: the last window's, and with no load.",
    ),
    inFlight: registry.gauge('floodgate_in_flight_requests', 'Requests being handled right now.'),
    slots: registry.gauge(
      'floodgate_concurrency_slots_in_use',
      "Concurrency slots held by this gateway's requests in flight, by rule.",
    ),
    reloads: registry.counter('floodgate_config_reloads_total', 'Configuration reloads (SIGHUP), by result.'),
    thresholds: registry.counter(
      'floodgate_thresholds_total',
      "Calendar rules' thresholds reached (once per key, rule, threshold and period across the gateways on a store), by rule and threshold.",
    ),
  };
}

export type GatewayMetrics = ReturnType<typeof gatewayMetrics>;
