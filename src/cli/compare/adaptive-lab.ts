/**
 * `floodgate compare --adaptive`: a simulated upstream whose latency grows with its concurrency
 * past a capacity (which may change mid-run), offered more than it can take, in simulated time
 * (a run of a minute takes well under a second). Each controller runs on the same arrivals:
 *  - `none`: every request goes to the upstream;
 *  - `adaptive`: createAdaptiveLimit in front of it, shedding by criticality.
 * Sampled per bucket: the limit, requests in flight upstream, the latency of served requests,
 * and requests served, shed and timed out.
 */
import { type AdaptiveLimitOptions, type Criticality, createAdaptiveLimit } from '../../index.js';
import { CRITICALITIES } from '../../internal.js';
import { eventQueue } from './event-queue.js';
import { mulberry32 } from './scenarios.js';

export const ADAPTIVE_CONTROLLERS = ['none', 'adaptive'] as const;
export type AdaptiveController = (typeof ADAPTIVE_CONTROLLERS)[number];

export interface CapacityChange {
  /** Ms from the start. */
  readonly atMs: number;
  /** The upstream's new capacity (requests it serves at once at its no-load latency). */
  readonly capacity: number;
}

export interface AdaptiveLabSettings {
  readonly durationMs: number;
  /** Requests the upstream serves at once at its no-load latency. */
  readonly capacity: number;
  /** Its latency at or below capacity (ms); above, it grows in proportion to the concurrency. */
  readonly latencyMs: number;
  /** Offered load as a multiple of what the starting capacity serves. */
  readonly offered: number;
  readonly changes: readonly CapacityChange[];
  /** Shares of the arrivals by criticality (summing to 1). */
  readonly mix: Readonly<Record<Criticality, number>>;
  /** A client gives up after this long: the request is dropped (it still loads the upstream). */
  readonly timeoutMs: number;
  readonly seed: number;
  readonly bucketMs: number;
  /** Options of the adaptive limit (its clock is the simulation's). */
  readonly adaptive?: AdaptiveLimitOptions;
}

export interface AdaptiveBucket {
  /** Ms from the start to the end of the bucket. */
  readonly atMs: number;
  readonly limit: number | undefined;
  readonly inFlight: number;
  readonly capacity: number;
  /** Latency of requests served in the bucket, p99 (ms). */
  readonly p99Ms: number | undefined;
  readonly served: number;
  readonly shed: number;
  readonly timedOut: number;
}

export interface AdaptiveRun {
  readonly controller: AdaptiveController;
  readonly buckets: AdaptiveBucket[];
  readonly offered: Readonly<Record<Criticality, number>>;
  readonly served: Readonly<Record<Criticality, number>>;
  readonly shed: Readonly<Record<Criticality, number>>;
  readonly timedOut: number;
  /** p99 latency of every served request (ms). */
  readonly p99Ms: number;
  /** Served requests over what the upstream could have served at its capacity over the run. */
  readonly goodput: number;
}

type LabEvent =
  | { kind: 'arrive'; criticality: Criticality }
  | { kind: 'answer'; request: Request }
  | { kind: 'timeout'; request: Request }
  | { kind: 'leave'; request: Request };

interface Request {
  readonly criticality: Criticality;
  readonly latencyMs: number;
  end?: (() => void) | undefined;
  answered: boolean;
}

const counts = (): Record<Criticality, number> => ({ critical: 0, standard: 0, sheddable: 0 });

function p99(latencies: number[]): number | undefined {
  if (latencies.length === 0) return undefined;
  const sorted = latencies.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)];
}

/** The upstream's capacity at `atMs`. */
function capacityAt(settings: AdaptiveLabSettings, atMs: number): number {
  let capacity = settings.capacity;
  for (const change of settings.changes) if (change.atMs <= atMs) capacity = change.capacity;
  return capacity;
}

/** Runs one controller on the lab's arrivals. */
export function runAdaptiveLab(settings: AdaptiveLabSettings, controller: AdaptiveController): AdaptiveRun {
  const random = mulberry32(settings.seed);
  const events = eventQueue<LabEvent>();
  let now = 0;
  const limiter =
    controller === 'adaptive'
      ? createAdaptiveLimit({ eventLoop: false, ...settings.adaptive, clock: () => now, random })
      : undefined;
  const offered = counts();
  const served = counts();
  const shed = counts();
  const allLatencies: number[] = [];
  let upstreamInFlight = 0;
  let timedOut = 0;
  let bucket = { latencies: [] as number[], served: 0, shed: 0, timedOut: 0 };
  const buckets: AdaptiveBucket[] = [];
  let nextBucketAt = settings.bucketMs;

  const ratePerMs = (settings.offered * settings.capacity) / settings.latencyMs;
  const pickCriticality = (): Criticality => {
    let draw = random();
    for (const criticality of CRITICALITIES) {
      draw -= settings.mix[criticality];
      if (draw < 0) return criticality;
    }
    return 'standard';
  };
  // Poisson arrivals, drawn ahead: the same seed gives every controller the same traffic.
  for (
    let at = -Math.log(1 - random()) / ratePerMs;
    at < settings.durationMs;
    at += -Math.log(1 - random()) / ratePerMs
  ) {
    events.push(at, { kind: 'arrive', criticality: pickCriticality() });
  }

  function closeBuckets(until: number): void {
    while (nextBucketAt <= Math.min(until, settings.durationMs)) {
      buckets.push({
        atMs: nextBucketAt,
        limit: limiter?.stats().limit,
        inFlight: upstreamInFlight,
        capacity: capacityAt(settings, nextBucketAt),
        p99Ms: p99(bucket.latencies),
        served: bucket.served,
        shed: bucket.shed,
        timedOut: bucket.timedOut,
      });
      bucket = { latencies: [], served: 0, shed: 0, timedOut: 0 };
      nextBucketAt += settings.bucketMs;
    }
  }

  function arrive(criticality: Criticality): void {
    offered[criticality]++;
    if (limiter === undefined) {
      startRequest(criticality);
      return;
    }
    const admission = limiter.acquire(criticality);
    if (admission === undefined) {
      shed[criticality]++;
      bucket.shed++;
      return;
    }
    const request = startRequest(criticality);
    request.end = () => (request.answered ? admission.success() : admission.dropped());
  }

  function startRequest(criticality: Criticality): Request {
    upstreamInFlight++;
    const capacity = capacityAt(settings, now);
    // About ±10% noise around the model, so percentiles mean something.
    const noise = Math.exp(0.1 * Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random()));
    const latencyMs = settings.latencyMs * Math.max(1, upstreamInFlight / capacity) * noise;
    const request: Request = { criticality, latencyMs, end: undefined, answered: false };
    if (latencyMs <= settings.timeoutMs) events.push(now + latencyMs, { kind: 'answer', request });
    else events.push(now + settings.timeoutMs, { kind: 'timeout', request });
    events.push(now + latencyMs, { kind: 'leave', request });
    return request;
  }

  for (let next = events.pop(); next !== undefined; next = events.pop()) {
    closeBuckets(next.at);
    now = next.at;
    const event = next.event;
    if (event.kind === 'arrive') {
      arrive(event.criticality);
    } else if (event.kind === 'answer') {
      event.request.answered = true;
      event.request.end?.();
      // Answers after the end are the run's tail: not counted, as arrivals stopped at the end.
      if (now > settings.durationMs) continue;
      served[event.request.criticality]++;
      bucket.served++;
      bucket.latencies.push(event.request.latencyMs);
      allLatencies.push(event.request.latencyMs);
    } else if (event.kind === 'timeout') {
      timedOut++;
      bucket.timedOut++;
      event.request.end?.();
    } else {
      upstreamInFlight--;
    }
  }
  closeBuckets(settings.durationMs);

  let servable = 0;
  for (let at = 0; at < settings.durationMs; at += settings.bucketMs) {
    servable += (capacityAt(settings, at) / settings.latencyMs) * settings.bucketMs;
  }
  const totalServed = served.critical + served.standard + served.sheddable;
  return {
    controller,
    buckets,
    offered,
    served,
    shed,
    timedOut,
    p99Ms: p99(allLatencies) ?? 0,
    goodput: totalServed / servable,
  };
}
