/**
 * The no-load latency, and when to measure it again. Between probes it is the lowest window
 * latency seen (it only falls, so a quiet moment corrects it). A probe holds the upstream to a
 * low concurrency (its own setting, not the limit's floor) until it has gathered enough
 * latencies, and sets it afresh, up or down. Probes run only while requests are being shed:
 * without pressure nothing is refused for a measurement, and a slowed upstream brings the
 * pressure itself (the limit shrinks below the demand). They are jittered so a fleet of gateways
 * does not probe at once, and one comes early when the limit has sat on its floor for several
 * windows while shedding (a no-load latency measured under load keeps it there).
 */

export interface ProbeSettings {
  readonly probeIntervalMs: number;
  readonly probeJitter: number;
  readonly probeSamples: number;
  readonly windowMs: number;
  readonly random: () => number;
}

// A probe that cannot gather its latencies (little traffic) ends after this many windows anyway.
const PROBE_WINDOWS = 4;
// Windows in a row at the floor after which the no-load latency is doubted and measured again.
const FLOOR_WINDOWS = 5;

export interface NoLoadLatency {
  /** The estimate (ms); undefined before anything was measured. */
  readonly ms: number | undefined;
  /** A window's latency: lowers the estimate when lower. */
  saw(latencyMs: number): void;
  /** Whether a probe should start now. */
  due(now: number, pressed: boolean, windowsAtFloor: number): boolean;
  /** Whether the probe that started at `startedAt` is over, having gathered `gathered` latencies. */
  over(now: number, startedAt: number, gathered: number): boolean;
  /** A probe's result (undefined: it gathered nothing) replaces the estimate; the next probe is planned. */
  probed(now: number, latencyMs: number | undefined): void;
}

export function noLoadLatency(settings: ProbeSettings, start: number): NoLoadLatency {
  let ms: number | undefined;
  let nextProbeAt = 0;
  const planNext = (now: number) => {
    const jitter = (settings.random() * 2 - 1) * settings.probeJitter;
    nextProbeAt = now + settings.probeIntervalMs * (1 + jitter);
  };
  // The first windows' latencies stand in until then: a probe at start would refuse most of a
  // burst that only wanted to get going.
  planNext(start);
  return {
    get ms() {
      return ms;
    },
    saw(latencyMs) {
      if (ms === undefined || latencyMs < ms) ms = latencyMs;
    },
    due(now, pressed, windowsAtFloor) {
      // Never without pressure: at its floor with nothing refused, a probe would only shed.
      return pressed && (now >= nextProbeAt || windowsAtFloor >= FLOOR_WINDOWS);
    },
    over(now, startedAt, gathered) {
      return gathered >= settings.probeSamples || now - startedAt >= settings.windowMs * PROBE_WINDOWS;
    },
    probed(now, latencyMs) {
      if (latencyMs !== undefined) ms = latencyMs;
      planNext(now);
    },
  };
}
