/**
 * The fleet's heavy hitters: a limiter on a store with `sketches` (Redis) also counts its checks
 * in a pair of pending sketches, which it merges into the store's every interval and then starts
 * afresh, so any process can read the keys of every process (`top({ fleet: true })`). An idle
 * process writes nothing. A merge that fails is dropped: a key's fleet count then misses it
 * (a merge that timed out may have been applied, and sending it again could count it twice).
 */
import type { FleetSketches, Sketch, TopBy, TopEntry } from '../stores/types.js';
import { mergeTop, TOP_PERIOD_MS } from './heavy-hitters.js';
import { createSpaceSaving, type SpaceSaving } from './space-saving.js';

/** Entries one merge sends per measure: the counts of the rest raise the floor it sends instead. */
const MERGE_ENTRIES = 1000;

export interface FleetOptions {
  sketches: FleetSketches;
  prefix: string;
  /** Counters of each pending sketch, and the most keys the fleet's sketches keep. */
  capacity: number;
  intervalMs: number;
  /** How long `close` waits for its last merge. */
  timeoutMs: number;
  failed(error: unknown): void;
}

export interface Fleet {
  /** A check of `key` (already bounded in length), denied or not. */
  offer(key: string, denied: boolean): void;
  /** The fleet's `limit` keys with the highest counts, most first, as of the last merges. */
  top(by: TopBy, limit: number): Promise<TopEntry[]>;
  /** Stops merging, after a last merge of what is pending (waited for at most `timeoutMs`). */
  close(): Promise<void>;
}

export function createFleet(options: FleetOptions): Fleet {
  const { sketches, prefix, capacity } = options;
  let checked = createSpaceSaving(capacity);
  let denied = createSpaceSaving(capacity);

  function merge(): Promise<void> {
    if (checked.size === 0) return Promise.resolve();
    const sent = [sketchOf(checked), sketchOf(denied)] as const;
    checked = createSpaceSaving(capacity);
    denied = createSpaceSaving(capacity);
    return sketches.merge(prefix, TOP_PERIOD_MS, capacity, ...sent).catch(options.failed);
  }
  const timer = setInterval(merge, options.intervalMs);
  // A limiter nobody closed must not keep its process alive.
  timer.unref();

  return {
    offer(key, wasDenied) {
      checked.offer(key);
      if (wasDenied) denied.offer(key);
    },
    top: (by, limit) => fleetTop(sketches, prefix, by, limit),
    async close() {
      clearInterval(timer);
      let waited: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        merge(),
        new Promise<void>((resolve) => {
          waited = setTimeout(resolve, options.timeoutMs);
        }),
      ]);
      clearTimeout(waited);
    },
  };
}

/** The fleet's `limit` keys with the highest counts under `prefix`, most first (`floodgate top` reads it too). */
export async function fleetTop(
  sketches: FleetSketches,
  prefix: string,
  by: TopBy,
  limit: number,
): Promise<TopEntry[]> {
  const found = await sketches.read(prefix, by, TOP_PERIOD_MS);
  return mergeTop(
    found.map((sketch) => sketch.entries),
    found.map((sketch) => sketch.floor),
    limit,
  );
}

/** A sketch's first `max` entries, and a floor that bounds the rest. */
export function sketchOf(sketch: SpaceSaving, max = MERGE_ENTRIES): Sketch {
  const entries = sketch.entries();
  if (entries.length <= max) return { entries, floor: sketch.floor };
  return { entries: entries.slice(0, max), floor: Math.max(sketch.floor, (entries[max] as TopEntry).count) };
}
