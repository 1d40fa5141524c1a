/**
 * Space-Saving (Metwally, Agrawal and El Abbadi, 2005): the most frequent keys of a stream in a
 * fixed number of counters. A key already counted adds 1; a new key takes a free counter, or the
 * counter with the smallest count, inheriting that count as its error. Every counter then bounds
 * its key's true count: `count - error <= true <= count`, and any key seen more than N / capacity
 * times holds a counter.
 *
 * The counters sit in a stream summary: buckets of equal count in a list sorted by count, each
 * with its counters in a list of its own, so an update is O(1) (a counter moves to the next
 * bucket) and the smallest counter is the first of the first bucket. Everything lives in typed
 * arrays allocated once: an update allocates nothing but a key's map entry.
 */
import type { TopEntry } from '../stores/types.js';

export type { TopEntry };

export interface SpaceSaving {
  offer(key: string): void;
  /** Every counter in use, most first (ties in no particular order). */
  entries(): TopEntry[];
  /** The count of a key this sketch does not hold is at most this: 0 while a counter is free. */
  readonly floor: number;
  readonly size: number;
}

const NONE = -1;

export function createSpaceSaving(capacity: number): SpaceSaving {
  const keys: (string | undefined)[] = new Array(capacity).fill(undefined);
  const index = new Map<string, number>();
  const count = new Float64Array(capacity);
  const error = new Float64Array(capacity);
  // Each counter's bucket, and its neighbours in that bucket's list.
  const bucketOf = new Int32Array(capacity);
  const next = new Int32Array(capacity);
  const prev = new Int32Array(capacity);
  // Buckets, at most one per counter: the count, the first counter, the neighbours by count.
  const bucketCount = new Float64Array(capacity);
  const bucketHead = new Int32Array(capacity);
  const bucketNext = new Int32Array(capacity);
  const bucketPrev = new Int32Array(capacity);
  const free = Int32Array.from({ length: capacity }, (_, i) => capacity - 1 - i);
  let freeTop = capacity;
  let smallest = NONE;
  let largest = NONE;
  let used = 0;

  function newBucket(value: number, after: number): number {
    const bucket = free[--freeTop] as number;
    bucketCount[bucket] = value;
    bucketHead[bucket] = NONE;
    const following = after === NONE ? smallest : (bucketNext[after] as number);
    bucketPrev[bucket] = after;
    bucketNext[bucket] = following;
    if (after === NONE) smallest = bucket;
    else bucketNext[after] = bucket;
    if (following === NONE) largest = bucket;
    else bucketPrev[following] = bucket;
    return bucket;
  }

  function dropBucket(bucket: number): void {
    const before = bucketPrev[bucket] as number;
    const after = bucketNext[bucket] as number;
    if (before === NONE) smallest = after;
    else bucketNext[before] = after;
    if (after === NONE) largest = before;
    else bucketPrev[after] = before;
    free[freeTop++] = bucket;
  }

  function attach(counter: number, bucket: number): void {
    const head = bucketHead[bucket] as number;
    bucketOf[counter] = bucket;
    prev[counter] = NONE;
    next[counter] = head;
    if (head !== NONE) prev[head] = counter;
    bucketHead[bucket] = counter;
  }

  function detach(counter: number): void {
    const bucket = bucketOf[counter] as number;
    const before = prev[counter] as number;
    const after = next[counter] as number;
    if (before === NONE) bucketHead[bucket] = after;
    else next[before] = after;
    if (after !== NONE) prev[after] = before;
  }

  function increment(counter: number): void {
    const bucket = bucketOf[counter] as number;
    const value = (bucketCount[bucket] as number) + 1;
    const following = bucketNext[bucket] as number;
    count[counter] = value;
    if (following !== NONE && bucketCount[following] === value) {
      detach(counter);
      attach(counter, following);
      if (bucketHead[bucket] === NONE) dropBucket(bucket);
    } else if (bucketHead[bucket] === counter && next[counter] === NONE) {
      // Alone in its bucket, and no bucket holds value yet: the bucket moves up with it.
      bucketCount[bucket] = value;
    } else {
      detach(counter);
      attach(counter, newBucket(value, bucket));
    }
  }

  return {
    offer(key) {
      const known = index.get(key);
      if (known !== undefined) return increment(known);
      if (used < capacity) {
        const counter = used++;
        keys[counter] = key;
        index.set(key, counter);
        count[counter] = 1;
        error[counter] = 0;
        attach(counter, smallest !== NONE && bucketCount[smallest] === 1 ? smallest : newBucket(1, NONE));
        return;
      }
      // The smallest counter changes hands: its count is the new key's error.
      const counter = bucketHead[smallest] as number;
      index.delete(keys[counter] as string);
      keys[counter] = key;
      index.set(key, counter);
      error[counter] = count[counter] as number;
      increment(counter);
    },
    entries() {
      const found: TopEntry[] = [];
      for (let bucket = largest; bucket !== NONE; bucket = bucketPrev[bucket] as number) {
        for (
          let counter = bucketHead[bucket] as number;
          counter !== NONE;
          counter = next[counter] as number
        ) {
          found.push({
            key: keys[counter] as string,
            count: count[counter] as number,
            error: error[counter] as number,
          });
        }
      }
      return found;
    },
    get floor() {
      return used < capacity ? 0 : (bucketCount[smallest] as number);
    },
    get size() {
      return used;
    },
  };
}
