/**
 * The load generator: a closed loop that keeps `inFlight` checks outstanding for a fixed time and
 * records how long each one took. Every contender is driven by this same loop, so differences in
 * the numbers are differences between the limiters, not between harnesses.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A full collection before each measurement, so no row pays for the previous row's garbage.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** One check: `i` is a running index the operation may use to pick a key. Resolves to "allowed". */
export type Operation = (i: number) => Promise<boolean>;

export interface LoadOptions {
  /** Checks kept outstanding at once. */
  inFlight: number;
  /** Measured time, in seconds. */
  seconds: number;
  /** Unmeasured time before it (JIT, script loading, filling the limit), in seconds. */
  warmupSeconds: number;
  /** Record per-check latency (two clock reads per check; skip it for sub-microsecond in-process checks). */
  latency?: boolean;
  /** Called between the warmup and the measured run, e.g. to snapshot Redis statistics. */
  betweenPhases?: () => Promise<void>;
}

export interface LoadResult {
  /** Checks completed in the measured run. */
  ops: number;
  /** Checks that were allowed. */
  allowed: number;
  seconds: number;
  perSecond: number;
  /** Latency percentiles in microseconds (NaN when latency was not recorded). */
  p50Us: number;
  p99Us: number;
}

/** Log-bucketed latency histogram: 32 buckets per doubling (~2% resolution), from 1 ns to ~17 minutes. */
class Histogram {
  private static readonly PER_OCTAVE = 32;
  private static readonly MIN_OCTAVE = -10; // 2^-10 µs ≈ 1 ns
  private readonly counts = new Float64Array(40 * Histogram.PER_OCTAVE);
  private total = 0;

  record(us: number): void {
    let index = Math.floor((Math.log2(Math.max(us, 2 ** Histogram.MIN_OCTAVE)) - Histogram.MIN_OCTAVE) * 32);
    if (index >= this.counts.length) index = this.counts.length - 1;
    this.counts[index] = (this.counts[index] as number) + 1;
    this.total++;
  }

  percentile(p: number): number {
    if (this.total === 0) return Number.NaN;
    const rank = Math.ceil((p / 100) * this.total);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i] as number;
      // The bucket's geometric midpoint.
      if (seen >= rank) return 2 ** ((i + 0.5) / Histogram.PER_OCTAVE + Histogram.MIN_OCTAVE);
    }
    return Number.NaN;
  }
}

interface Phase {
  ops: number;
  allowed: number;
  seconds: number;
  histogram: Histogram | undefined;
}

async function runPhase(
  operation: Operation,
  inFlight: number,
  seconds: number,
  latency: boolean,
  counter: { next: number },
): Promise<Phase> {
  const histogram = latency ? new Histogram() : undefined;
  let ops = 0;
  let allowed = 0;
  const start = performance.now();
  const end = start + seconds * 1000;

  async function worker(): Promise<void> {
    if (histogram !== undefined) {
      // Also the loop condition: in-process checks resolve on microtasks only, so no timer could stop them.
      for (let now = performance.now(); now < end; ) {
        const ok = await operation(counter.next++);
        const after = performance.now();
        histogram.record((after - now) * 1000);
        now = after;
        ops++;
        if (ok) allowed++;
      }
    } else {
      while (performance.now() < end) {
        for (let i = 0; i < 64; i++) {
          if (await operation(counter.next++)) allowed++;
        }
        ops += 64;
      }
    }
  }

  await Promise.all(Array.from({ length: inFlight }, worker));
  return { ops, allowed, seconds: (performance.now() - start) / 1000, histogram };
}

/** Warms up, then measures. Every check started is awaited before this resolves. */
export async function runLoad(operation: Operation, options: LoadOptions): Promise<LoadResult> {
  const latency = options.latency ?? true;
  const counter = { next: 0 };
  if (options.warmupSeconds > 0) {
    await runPhase(operation, options.inFlight, options.warmupSeconds, false, counter);
  }
  collectGarbage();
  await options.betweenPhases?.();
  const phase = await runPhase(operation, options.inFlight, options.seconds, latency, counter);
  return {
    ops: phase.ops,
    allowed: phase.allowed,
    seconds: phase.seconds,
    perSecond: phase.ops / phase.seconds,
    p50Us: phase.histogram?.percentile(50) ?? Number.NaN,
    p99Us: phase.histogram?.percentile(99) ?? Number.NaN,
  };
}

/** Runs exactly `total` checks, `inFlight` at a time; resolves to how many were allowed. */
export async function runCount(operation: Operation, total: number, inFlight: number): Promise<number> {
  let next = 0;
  let allowed = 0;
  async function worker(): Promise<void> {
    while (next < total) {
      if (await operation(next++)) allowed++;
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, worker));
  return allowed;
}
