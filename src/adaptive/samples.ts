/**
 * A window's latencies in bounded memory: kept whole up to a fixed number, then a uniform
 * reservoir sample of them (so a window of a million requests costs the same as one of 512).
 */

const CAPACITY = 512;

export interface LatencySamples {
  /** Latencies seen in this window (all of them, not only those kept). */
  readonly count: number;
  add(latencyMs: number): void;
  /** The `p`th percentile (1-99) of the kept latencies; undefined when there are none. */
  percentile(p: number): number | undefined;
  clear(): void;
}

export function latencySamples(random: () => number): LatencySamples {
  const kept = new Float64Array(CAPACITY);
  let count = 0;
  return {
    get count() {
      return count;
    },
    add(latencyMs) {
      if (count < CAPACITY) {
        kept[count] = latencyMs;
      } else {
        // Reservoir sampling (Vitter's algorithm R): every latency of the window is kept with equal chance.
        const slot = Math.floor(random() * (count + 1));
        if (slot < CAPACITY) kept[slot] = latencyMs;
      }
      count++;
    },
    percentile(p) {
      const size = Math.min(count, CAPACITY);
      if (size === 0) return undefined;
      const sorted = kept.slice(0, size).sort();
      // Nearest rank: the smallest latency at or above p% of the samples.
      return sorted[Math.min(size - 1, Math.max(0, Math.ceil((p / 100) * size) - 1))];
    },
    clear() {
      count = 0;
    },
  };
}
