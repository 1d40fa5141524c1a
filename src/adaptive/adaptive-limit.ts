/**
 * createAdaptiveLimit: a concurrency limit for one process that moves with the upstream's
 * measured latency. Each request asks for admission with its criticality and reports how it
 * ended; every window the limit moves by the gradient of the no-load latency to the window's,
 * and now and then a probe measures the no-load latency again. Driven by the requests
 * themselves: no timers, nothing to close.
 */
import { createEmitter } from '../emitter.js';
import { ceilingOf } from './admission.js';
import { eventLoopMeter } from './event-loop.js';
import { nextLimit } from './gradient.js';
import {
  type AdaptiveLimitOptions,
  CRITICALITIES,
  type Criticality,
  type ResolvedAdaptiveOptions,
  resolveAdaptiveOptions,
} from './options.js';
import { noLoadLatency } from './probe.js';
import { latencySamples } from './samples.js';

/** A request let through: report how it ended, once (later calls do nothing). */
export interface Admission {
  /**
   * The upstream answered: its latency counts, by default the time since `acquire`; give the
   * time to the response's head instead when its body streams for long.
   */
  success(latencyMs?: number): void;
  /** The upstream timed out or answered that it is overloaded: the limit backs off. */
  dropped(): void;
  /** Ended in a way that says nothing of the upstream (the client went away): not counted. */
  ignore(): void;
}

export interface AdaptiveStats {
  /** The concurrency limit now (while probing, the probe's). */
  readonly limit: number;
  readonly inFlight: number;
  /** The no-load latency last measured (ms); undefined before the first probe ends. */
  readonly noLoadMs: number | undefined;
  /** The last full window's latency at the configured percentile (ms). */
  readonly latencyMs: number | undefined;
  readonly probing: boolean;
  /** Requests refused, by criticality, since creation. */
  readonly shed: Readonly<Record<Criticality, number>>;
  /** Requests let through, by criticality, since creation. */
  readonly admitted: Readonly<Record<Criticality, number>>;
}

export interface AdaptiveLimitEvents {
  /** The limit moved to another whole number. */
  limit: [{ limit: number; previous: number; latencyMs: number | undefined; noLoadMs: number | undefined }];
}

export interface AdaptiveLimit {
  /** Admits a request of `criticality` (default `'standard'`), or answers undefined: shed it now. */
  acquire(criticality?: Criticality): Admission | undefined;
  stats(): AdaptiveStats;
  on<E extends keyof AdaptiveLimitEvents>(
    event: E,
    listener: (...args: AdaptiveLimitEvents[E]) => void,
  ): void;
  off<E extends keyof AdaptiveLimitEvents>(
    event: E,
    listener: (...args: AdaptiveLimitEvents[E]) => void,
  ): void;
}

// A window with fewer latencies than this is too thin to steer by.
const MIN_SAMPLES = 5;

const byCriticality = (): Record<Criticality, number> => ({ critical: 0, standard: 0, sheddable: 0 });

/**
 * Creates an adaptive concurrency limit. Put it in front of the work it protects: `acquire`
 * before, and `success`, `dropped` or `ignore` after.
 * @example
 * const adaptive = createAdaptiveLimit({ min: 2, max: 500 });
 * const admission = adaptive.acquire('sheddable');
 * if (admission === undefined) return shed(); // 503 with Retry-After, at once
 * try { await callUpstream(); admission.success(); } catch { admission.dropped(); }
 */
export function createAdaptiveLimit(options: AdaptiveLimitOptions = {}): AdaptiveLimit {
  const settings = resolveAdaptiveOptions(options);
  const emitter = createEmitter<AdaptiveLimitEvents>();
  const window = createWindowState(settings);
  const shed = byCriticality();
  const admitted = byCriticality();

  function acquire(criticality: Criticality = 'standard'): Admission | undefined {
    if (!CRITICALITIES.includes(criticality)) {
      throw new RangeError(
        `acquire: criticality ${JSON.stringify(criticality)} must be one of ${CRITICALITIES.join(', ')}`,
      );
    }
    const now = settings.clock();
    window.advance(now, emitter.emit);
    if (window.inFlight >= ceilingOf(window.ceiling(), criticality, settings)) {
      shed[criticality]++;
      window.pressed();
      return undefined;
    }
    admitted[criticality]++;
    return window.admit(now, emitter.emit);
  }

  return {
    acquire,
    stats: () => ({ ...window.stats(), shed: { ...shed }, admitted: { ...admitted } }),
    on: emitter.on,
    off: emitter.off,
  };
}

type Emit = ReturnType<typeof createEmitter<AdaptiveLimitEvents>>['emit'];

/** The measuring state: the limit, the window's latencies, the probe, and what is in flight. */
function createWindowState(settings: ResolvedAdaptiveOptions) {
  const samples = latencySamples(settings.random);
  const noLoad = noLoadLatency(settings, settings.clock());
  const utilization = settings.eventLoop === false ? undefined : eventLoopMeter();
  let limit = settings.initial;
  let inFlight = 0;
  let peakInFlight = 0;
  let dropped = false;
  let pressed = false;
  let windowStart = settings.clock();
  let latencyMs: number | undefined;
  let probeStartedAt: number | undefined;
  let windowsAtFloor = 0;
  // Requests carry the epoch they were admitted in; one admitted before a probe began (or ended)
  // ran under other load, and its latency would skew the new measurement.
  let epoch = 0;

  function clearWindow(now: number): void {
    samples.clear();
    dropped = false;
    pressed = false;
    peakInFlight = inFlight;
    windowStart = now;
  }

  function startProbe(now: number): void {
    probeStartedAt = now;
    epoch++;
    clearWindow(now);
  }

  function endProbe(now: number): void {
    noLoad.probed(now, samples.percentile(settings.percentile));
    probeStartedAt = undefined;
    windowsAtFloor = 0;
    epoch++;
    clearWindow(now);
  }

  function closeWindow(now: number, emit: Emit): void {
    latencyMs = samples.percentile(settings.percentile);
    // Too few latencies for a percentile to mean much: they neither lower the estimate nor steer.
    if (latencyMs !== undefined && samples.count >= MIN_SAMPLES) noLoad.saw(latencyMs);
    const saturated = utilization !== undefined && utilization() > (settings.eventLoop as number);
    const previous = limit;
    const noLoadMs = noLoad.ms;
    if (noLoadMs !== undefined) {
      const steering = samples.count >= MIN_SAMPLES ? latencyMs : undefined;
      limit = nextLimit(limit, { latencyMs: steering, noLoadMs, peakInFlight, dropped, saturated }, settings);
    }
    windowsAtFloor = limit <= settings.min ? windowsAtFloor + 1 : 0;
    if (Math.floor(limit) !== Math.floor(previous)) {
      emit('limit', { limit: Math.floor(limit), previous: Math.floor(previous), latencyMs, noLoadMs });
    }
    const wasPressed = pressed;
    // The window's own count, not a new epoch: requests in flight still belong to the next window.
    clearWindow(now);
    if (noLoad.due(now, wasPressed, windowsAtFloor)) startProbe(now);
  }

  function advance(now: number, emit: Emit): void {
    if (probeStartedAt !== undefined) {
      if (noLoad.over(now, probeStartedAt, samples.count)) endProbe(now);
    } else if (now - windowStart >= settings.windowMs) {
      closeWindow(now, emit);
    }
  }

  function finish(
    startedAt: number,
    admittedIn: number,
    outcome: 'success' | 'dropped' | 'ignore',
    latencyMs: number | undefined,
    emit: Emit,
  ): void {
    inFlight--;
    const now = settings.clock();
    if (admittedIn === epoch) {
      if (outcome === 'success') samples.add(latencyMs ?? now - startedAt);
      else if (outcome === 'dropped') dropped = true;
    }
    advance(now, emit);
  }

  return {
    get inFlight() {
      return inFlight;
    },
    /** A request was refused: the window is under pressure. */
    pressed() {
      pressed = true;
    },
    advance,
    /** The concurrency requests may fill now: the limit, or a probe's lower concurrency. */
    ceiling(): number {
      return probeStartedAt === undefined ? limit : Math.min(limit, settings.probeConcurrency);
    },
    admit(now: number, emit: Emit): Admission {
      inFlight++;
      if (inFlight > peakInFlight) peakInFlight = inFlight;
      const admittedIn = epoch;
      let open = true;
      const end = (outcome: 'success' | 'dropped' | 'ignore', latencyMs?: number) => {
        if (!open) return;
        open = false;
        finish(now, admittedIn, outcome, latencyMs, emit);
      };
      return {
        success: (latencyMs) => end('success', latencyMs),
        dropped: () => end('dropped'),
        ignore: () => end('ignore'),
      };
    },
    stats() {
      const probing = probeStartedAt !== undefined;
      return {
        limit: Math.floor(probing ? Math.min(limit, settings.probeConcurrency) : limit),
        inFlight,
        noLoadMs: noLoad.ms,
        latencyMs,
        probing,
      };
    },
  };
}
