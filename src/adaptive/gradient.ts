/**
 * The limit's next value from one window's measurements: a gradient controller (the ratio of the
 * no-load latency, plus a tolerance, to the window's latency) with multiplicative back-off.
 * Pure: the same inputs always give the same limit.
 */

export interface WindowMeasurement {
  /** The window's latency at the configured percentile; undefined when nothing completed. */
  readonly latencyMs: number | undefined;
  /** The no-load latency last measured. */
  readonly noLoadMs: number;
  /** Most requests in flight at once during the window. */
  readonly peakInFlight: number;
  /** Whether a request was dropped (timed out, answered overload) in the window. */
  readonly dropped: boolean;
  /** Whether the process's event loop was saturated over the window. */
  readonly saturated: boolean;
}

export interface GradientSettings {
  readonly min: number;
  readonly max: number;
  readonly tolerance: number;
  readonly smoothing: number;
  readonly backoff: number;
}

// A window's latency can at most halve the limit or double it: one odd window cannot swing it further.
const MIN_GRADIENT = 0.5;
const MAX_GRADIENT = 2;
// Below half the limit in flight, the latency says nothing about more: the limit does not grow.
const APP_LIMITED = 0.5;

/** The limit after one window. */
export function nextLimit(limit: number, window: WindowMeasurement, settings: GradientSettings): number {
  let target = limit;
  if (window.latencyMs !== undefined) {
    const allowedMs = window.noLoadMs * (1 + settings.tolerance);
    const gradient = Math.min(
      MAX_GRADIENT,
      Math.max(MIN_GRADIENT, allowedMs / Math.max(window.latencyMs, 1e-3)),
    );
    if (gradient < 1) {
      target = limit * gradient;
    } else if (!window.saturated && window.peakInFlight >= limit * APP_LIMITED) {
      // Room to grow: by the gradient, plus a queue of √limit so a limit at the optimum still probes upwards.
      target = limit * gradient + Math.sqrt(limit);
    }
  }
  if (window.dropped) target = Math.min(target, limit * settings.backoff);
  const next = limit + settings.smoothing * (target - limit);
  return Math.min(settings.max, Math.max(settings.min, next));
}
