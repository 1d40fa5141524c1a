/**
 * What the admin listener's live page reads (`GET /stats`, polled every second) and `GET /top`:
 * the gateway's counters as they stand (the page turns two readings into rates), the store's
 * check latency buckets, slots held, and the keys denied most. Queries are validated here.
 */
import type { TopEntry } from '../../index.js';
import { TOP_KEYS } from './limiters.js';
import type { GatewayMetrics, HistogramSeries } from './metrics.js';

export type TopBy = 'denied' | 'checked';

export interface LiveSources {
  metrics: GatewayMetrics;
  /** The current store's label (`memory`, or the Redis target without credentials). */
  store(): string;
  top(by: TopBy, limit: number, fleet?: boolean): Promise<TopEntry[]>;
}

/** Keys on the live page. */
const PAGE_TOP = 10;
const QUERY = /^[0-9]{1,7}$/;

/** What `GET /top` asks: by which measure, how many keys, and whether the whole fleet's. */
export interface TopQuery {
  readonly by: TopBy;
  readonly limit: number;
  /** The keys of every process on the store (as of their last merges), not only this gateway's. */
  readonly fleet: boolean;
}

/** `?by=&limit=&fleet=` of `GET /top`: the options, or the message of a 400. */
export function topQuery(search: URLSearchParams): TopQuery | string {
  for (const name of search.keys()) {
    if (name !== 'by' && name !== 'limit' && name !== 'fleet')
      return `unknown parameter ${JSON.stringify(name)}; /top takes by, limit and fleet`;
  }
  const by = search.get('by') ?? 'denied';
  if (by !== 'denied' && by !== 'checked') return `by: ${JSON.stringify(by)} must be denied or checked`;
  const text = search.get('limit') ?? '10';
  const limit = QUERY.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= TOP_KEYS)) {
    return `limit: ${JSON.stringify(text.slice(0, 20))} must be an integer from 1 to ${TOP_KEYS}`;
  }
  const fleet = search.get('fleet') ?? 'false';
  if (fleet !== 'true' && fleet !== 'false')
    return `fleet: ${JSON.stringify(fleet.slice(0, 20))} must be true or false`;
  return { by, limit, fleet: fleet === 'true' };
}

/** Sums histogram series (every store, one operation) bucket by bucket. */
function summed(series: readonly HistogramSeries[], operation: string) {
  let counts: number[] | undefined;
  let count = 0;
  for (const entry of series) {
    if (entry.labels.operation !== operation) continue;
    counts = counts === undefined ? [...entry.counts] : counts.map((n, i) => n + (entry.counts[i] as number));
    count += entry.count;
  }
  return { counts: counts ?? [], count };
}

/** Each adaptive limit (`''`: the upstream's, else a route's own) as its gauges and counters stand. */
function adaptiveLimits(metrics: GatewayMetrics) {
  const limits = new Map<
    string,
    { limit: number; inFlight: number; shed: Record<string, number>; latency: Record<string, number> }
  >();
  const of = (route = '') => {
    let entry = limits.get(route);
    if (entry === undefined) {
      entry = { limit: 0, inFlight: 0, shed: {}, latency: {} };
      limits.set(route, entry);
    }
    return entry;
  };
  for (const { labels, value } of metrics.adaptiveLimit.series()) of(labels.route).limit = value;
  for (const { labels, value } of metrics.adaptiveInFlight.series()) of(labels.route).inFlight = value;
  for (const { labels, value } of metrics.adaptiveShed.series())
    of(labels.route).shed[labels.priority ?? ''] = value;
  for (const { labels, value } of metrics.adaptiveLatency.series())
    of(labels.route).latency[labels.kind ?? ''] = value;
  return [...limits].map(([route, entry]) => ({ route, ...entry }));
}

export async function liveStats(sources: LiveSources) {
  const { metrics } = sources;
  const latency = metrics.storeLatency.series();
  return {
    at: Date.now(),
    store: sources.store(),
    decisions: metrics.decisions.series().map(({ labels, value }) => ({ ...labels, count: value })),
    shadowDenied: metrics.shadowDenied.series().map(({ labels, value }) => ({ ...labels, count: value })),
    degraded: Object.fromEntries(
      metrics.degraded.series().map(({ labels, value }) => [labels.reason, value]),
    ),
    storeErrors: metrics.storeErrors.series().reduce((sum, { value }) => sum + value, 0),
    latency: { bounds: metrics.storeLatency.buckets, ...summed(latency, 'check') },
    leaseTakes: summed(latency, 'lease').count,
    slots: metrics.slots.series().map(({ labels, value }) => ({ rule: labels.rule, held: value })),
    inFlight: metrics.inFlight.series().reduce((sum, { value }) => sum + value, 0),
    adaptive: adaptiveLimits(metrics),
    top: await sources.top('denied', PAGE_TOP),
  };
}
