/**
 * The keys a limiter checks and denies most, in bounded memory: per measure, two Space-Saving
 * sketches of `capacity` counters, the current one and the one before it, swapped every
 * PERIOD_MS. `top` reads both, so it covers between one and two periods back from now (the
 * moving start), and a key that stops being checked drops out after at most two periods.
 */
import type { TopBy } from '../stores/types.js';
import { createSpaceSaving, type SpaceSaving, type TopEntry } from './space-saving.js';

export type { TopBy };

/**
 * Longest key a sketch keeps whole: a longer one is kept as its first characters and `…`, so a
 * client's 100 kB key costs a sketch no more than any other (keys sharing that start count together).
 */
export const MAX_TOP_KEY_LENGTH = 128;

/** How long one sketch counts before it becomes the previous one. */
export const TOP_PERIOD_MS = 5 * 60_000;
/** Offers between two reads of the clock (a clock read can cost more than an offer); `top` always reads it. */
const CLOCK_EVERY = 64;

export interface HeavyHitters {
  /** A check of `key`, denied or not. */
  offer(key: string, denied: boolean): void;
  /** The `limit` keys with the highest counts, most first. */
  top(by: TopBy, limit: number): TopEntry[];
}

interface Measure {
  current: SpaceSaving;
  previous: SpaceSaving;
}

export function createHeavyHitters(
  capacity: number,
  clock: () => number,
  clockEvery: number = CLOCK_EVERY,
): HeavyHitters {
  const measure = (): Measure => ({
    current: createSpaceSaving(capacity),
    previous: createSpaceSaving(capacity),
  });
  const checked = measure();
  const denied = measure();
  let rotateAt = clock() + TOP_PERIOD_MS;
  let unclocked = 0;

  function rotate(now: number): void {
    // Idle for two periods or more: both sketches are out of the window.
    const idle = now >= rotateAt + TOP_PERIOD_MS;
    for (const each of [checked, denied]) {
      each.previous = idle ? createSpaceSaving(capacity) : each.current;
      each.current = createSpaceSaving(capacity);
    }
    rotateAt = now + TOP_PERIOD_MS;
  }

  return {
    offer(key, wasDenied) {
      if (++unclocked >= clockEvery) {
        unclocked = 0;
        const now = clock();
        if (now >= rotateAt) rotate(now);
      }
      checked.current.offer(key);
      if (wasDenied) denied.current.offer(key);
    },
    top(by, limit) {
      const now = clock();
      if (now >= rotateAt) rotate(now);
      const { current, previous } = by === 'denied' ? denied : checked;
      return mergeTop([current.entries(), previous.entries()], [current.floor, previous.floor], limit);
    },
  };
}

/** `key`, or its first MAX_TOP_KEY_LENGTH - 1 characters and `…` (never half a surrogate pair). */
export function boundedKey(key: string): string {
  if (key.length <= MAX_TOP_KEY_LENGTH) return key;
  const cut = MAX_TOP_KEY_LENGTH - 1;
  const high = key.charCodeAt(cut - 1);
  return `${key.slice(0, high >= 0xd800 && high <= 0xdbff ? cut - 1 : cut)}…`;
}

/**
 * The union of several sketches' entries, most first. A key one sketch does not hold was seen
 * there at most that sketch's floor times: its count and its error both take that floor, so
 * `count - error <= true <= count` still holds for the sum.
 */
export function mergeTop(
  lists: readonly (readonly TopEntry[])[],
  floors: readonly number[],
  limit: number,
): TopEntry[] {
  const floorSum = floors.reduce((sum, floor) => sum + floor, 0);
  const merged = new Map<string, TopEntry>();
  lists.forEach((entries, i) => {
    const floor = floors[i] as number;
    for (const entry of entries) {
      let total = merged.get(entry.key);
      if (total === undefined) {
        // Assume the floors of every sketch, then take back this one's: it holds the key.
        total = { key: entry.key, count: floorSum, error: floorSum };
        merged.set(entry.key, total);
      }
      total.count += entry.count - floor;
      total.error += entry.error - floor;
    }
  });
  return [...merged.values()]
    .sort((a, b) => b.count - a.count || a.error - b.error || (a.key < b.key ? -1 : 1))
    .slice(0, limit);
}
