/**
 * Heavy hitters: the Space-Saving sketch against exact counts (a seeded Zipf stream of 1 M checks
 * over 100 k keys, and random streams), memory that does not grow with 1 M distinct keys, the
 * moving start (two sketches rotated), and limiter.top on a limiter.
 */

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/cli/compare/scenarios.js';
import { createLimiter, memoryStore } from '../../src/index.js';
import { createHeavyHitters, TOP_PERIOD_MS } from '../../src/telemetry/heavy-hitters.js';
import { createSpaceSaving, type TopEntry } from '../../src/telemetry/space-saving.js';

/** `length` ranks drawn from a Zipf distribution (exponent 1) over `keys` ranks. */
function zipfRanks(keys: number, length: number, seed: number): Int32Array {
  const cumulative = new Float64Array(keys);
  let total = 0;
  for (let rank = 0; rank < keys; rank++) {
    total += 1 / (rank + 1);
    cumulative[rank] = total;
  }
  const next = mulberry32(seed);
  const ranks = new Int32Array(length);
  for (let i = 0; i < length; i++) {
    const target = next() * total;
    let low = 0;
    let high = keys - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((cumulative[middle] as number) < target) low = middle + 1;
      else high = middle;
    }
    ranks[i] = low;
  }
  return ranks;
}

function expectBounds(entries: TopEntry[], truth: (key: string) => number): void {
  for (const { key, count, error } of entries) {
    const exact = truth(key);
    expect(count - error, key).toBeLessThanOrEqual(exact);
    expect(count, key).toBeGreaterThanOrEqual(exact);
  }
}

describe('Space-Saving sketch', () => {
  it('finds the true top 10 of a seeded Zipf stream of 1 M checks over 100 k keys, in order', () => {
    const keys = Array.from({ length: 100_000 }, (_, rank) => `tenant-${(rank * 7919) % 100_000}`);
    const ranks = zipfRanks(keys.length, 1_000_000, 42);
    const exact = new Int32Array(keys.length);
    const sketch = createHeavyHitters(1000, () => 0);
    for (const rank of ranks) {
      exact[rank] = (exact[rank] as number) + 1;
      sketch.offer(keys[rank] as string, false);
    }
    const byKey = new Map(keys.map((key, rank) => [key, exact[rank] as number]));
    const trueTop = [...byKey].sort((a, b) => b[1] - a[1]).slice(0, 10);
    const top = sketch.top('checked', 10);
    expect(top.map((entry) => entry.key)).toEqual(trueTop.map(([key]) => key));
    expectBounds(sketch.top('checked', 1000), (key) => byKey.get(key) ?? 0);
  });

  it('holds count − error ≤ true ≤ count, and counts every offer once, on random streams', () => {
    for (const seed of [1, 2, 3]) {
      const next = mulberry32(seed);
      const sketch = createSpaceSaving(50);
      const exact = new Map<string, number>();
      for (let i = 0; i < 20_000; i++) {
        // Half the checks from 20 hot keys, the rest spread over 5,000.
        const key = next() < 0.5 ? `hot-${Math.floor(next() * 20)}` : `cold-${Math.floor(next() * 5000)}`;
        exact.set(key, (exact.get(key) ?? 0) + 1);
        sketch.offer(key);
      }
      const entries = sketch.entries();
      expect(entries).toHaveLength(50);
      expect(entries.reduce((sum, entry) => sum + entry.count, 0)).toBe(20_000);
      expect(entries.map((entry) => entry.count)).toEqual(
        entries.map((entry) => entry.count).sort((a, b) => b - a),
      );
      expectBounds(entries, (key) => exact.get(key) ?? 0);
      const held = new Set(entries.map((entry) => entry.key));
      for (let hot = 0; hot < 20; hot++) expect(held.has(`hot-${hot}`)).toBe(true);
      for (const [key, count] of exact) if (!held.has(key)) expect(count).toBeLessThanOrEqual(sketch.floor);
    }
  });

  it('keeps its memory as 1 M distinct keys go through it', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const sketch = createHeavyHitters(1000, () => 0);
    for (let i = 0; i < 10_000; i++) sketch.offer(`warm-${i}`, true);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1_000_000; i++) sketch.offer(`distinct-key-${i}`, i % 2 === 0);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // A map of 1 M keys would take tens of megabytes; the sketch holds 4 × 1,000 counters.
    expect(grown).toBeLessThan(4 * 1024 * 1024);
    expect(sketch.top('checked', 1000)).toHaveLength(1000);
  });
});

describe('the moving start', () => {
  it('reads the current and the previous period, and forgets a key two periods on', () => {
    let now = 1_000_000;
    const sketch = createHeavyHitters(10, () => now, 1);
    for (let i = 0; i < 5; i++) sketch.offer('early', true);
    now += TOP_PERIOD_MS;
    for (let i = 0; i < 3; i++) sketch.offer('late', false);
    expect(sketch.top('checked', 10)).toEqual([
      { key: 'early', count: 5, error: 0 },
      { key: 'late', count: 3, error: 0 },
    ]);
    expect(sketch.top('denied', 10)).toEqual([{ key: 'early', count: 5, error: 0 }]);
    now += TOP_PERIOD_MS;
    expect(sketch.top('checked', 10)).toEqual([{ key: 'late', count: 3, error: 0 }]);
    now += 2 * TOP_PERIOD_MS;
    expect(sketch.top('checked', 10)).toEqual([]);
  });

  it('adds the other sketch’s floor to a key only one sketch holds, as a bound', () => {
    let now = 0;
    const sketch = createHeavyHitters(2, () => now, 1);
    for (const key of ['a', 'a', 'a', 'b', 'b', 'c']) sketch.offer(key, false);
    now += TOP_PERIOD_MS;
    for (const key of ['d', 'd']) sketch.offer(key, false);
    // The previous sketch: a 3, c 3 (error 2, it took b's counter); its floor is 3.
    expect(sketch.top('checked', 10)).toEqual([
      { key: 'd', count: 5, error: 3 },
      { key: 'a', count: 3, error: 0 },
      { key: 'c', count: 3, error: 2 },
    ]);
  });
});

describe('limiter.top', () => {
  it('answers the keys checked and denied most, with exact counts while the sketch has room', async () => {
    const limiter = createLimiter({
      rules: { algorithm: 'fixed-window', limit: 5, window: '1m' },
      topKeys: 100,
    });
    for (const [key, times] of [
      ['light', 3],
      ['heavy', 50],
      ['mid', 20],
    ] as const) {
      for (let i = 0; i < times; i++) await limiter.check(key);
    }
    await limiter.peek('never-checked');
    expect(await limiter.top({ by: 'checked' })).toEqual([
      { key: 'heavy', count: 50, error: 0 },
      { key: 'mid', count: 20, error: 0 },
      { key: 'light', count: 3, error: 0 },
    ]);
    expect(await limiter.top()).toEqual([
      { key: 'heavy', count: 45, error: 0 },
      { key: 'mid', count: 15, error: 0 },
    ]);
    expect(await limiter.top({ by: 'denied', limit: 1 })).toEqual([{ key: 'heavy', count: 45, error: 0 }]);
  });

  it('counts shadow rules’ would-be denials as denials', async () => {
    const limiter = createLimiter({
      rules: { algorithm: 'fixed-window', limit: 1, window: '1m' },
      shadow: true,
      store: memoryStore(),
    });
    for (let i = 0; i < 4; i++) await limiter.check('trial-key');
    expect(await limiter.top()).toEqual([{ key: 'trial-key', count: 3, error: 0 }]);
  });

  it('rejects bad options naming them, and answers nothing with topKeys 0', async () => {
    const limiter = createLimiter({
      rules: { algorithm: 'fixed-window', limit: 5, window: '1m' },
      topKeys: 20,
    });
    await expect(limiter.top({ by: 'keys' as never })).rejects.toThrow(
      new RangeError(`top: by: "keys" must be 'denied' or 'checked'`),
    );
    await expect(limiter.top({ limit: 21 })).rejects.toThrow(
      new RangeError('top: limit: 21 must be an integer from 1 to 20'),
    );
    await expect(limiter.top({ limit: 0 })).rejects.toThrow(
      new RangeError('top: limit: 0 must be an integer from 1 to 20'),
    );
    await expect(limiter.top({ count: 3 } as never)).rejects.toThrow(
      new TypeError("top options: unknown option 'count'; the options are by, limit, fleet"),
    );
    await expect(limiter.top({ fleet: 'yes' as never })).rejects.toThrow(
      new TypeError('top: fleet: "yes" must be true or false'),
    );
    const off = createLimiter({ rules: { algorithm: 'fixed-window', limit: 5, window: '1m' }, topKeys: 0 });
    await off.check('a');
    await expect(off.top()).rejects.toThrow(
      new RangeError('top: this limiter keeps no heavy hitters (topKeys: 0); give topKeys a size'),
    );
  });
});
