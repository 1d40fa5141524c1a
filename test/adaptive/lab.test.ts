/**
 * The adaptive limit against a simulated upstream whose latency grows with its concurrency past
 * its capacity (src/cli/compare/adaptive-lab.ts, simulated time: exact and repeatable).
 */
import { describe, expect, it } from 'vitest';
import { type AdaptiveLabSettings, runAdaptiveLab } from '../../src/cli/compare/adaptive-lab.js';

const base: AdaptiveLabSettings = {
  durationMs: 30_000,
  capacity: 40,
  latencyMs: 20,
  offered: 3,
  changes: [],
  mix: { critical: 0.1, standard: 0.6, sheddable: 0.3 },
  timeoutMs: 1_000,
  seed: 7,
  bucketMs: 500,
};

describe('adaptive limit in the lab', () => {
  it('offered 3x capacity: p99 within 1.5x the unloaded p99, goodput >= 90%, critical >= 99% served, sheddable first', () => {
    const unloaded = runAdaptiveLab({ ...base, offered: 0.3 }, 'none');
    const run = runAdaptiveLab(base, 'adaptive');
    expect(run.p99Ms).toBeLessThanOrEqual(1.5 * unloaded.p99Ms);
    expect(run.goodput).toBeGreaterThanOrEqual(0.9);
    expect(run.served.critical / run.offered.critical).toBeGreaterThanOrEqual(0.99);
    const shedShare = (c: 'standard' | 'sheddable') => run.shed[c] / run.offered[c];
    expect(shedShare('sheddable')).toBeGreaterThan(shedShare('standard'));
    expect(run.timedOut).toBe(0);
  });

  it('without it, the same overload collapses: latency at the timeout, goodput a few percent', () => {
    const run = runAdaptiveLab({ ...base, durationMs: 5_000 }, 'none');
    expect(run.goodput).toBeLessThan(0.5);
    expect(run.timedOut).toBeGreaterThan(run.served.critical + run.served.standard + run.served.sheddable);
  });

  it('follows the capacity: halved, the limit follows within 5 s; restored, it recovers within 10 s', () => {
    const run = runAdaptiveLab(
      {
        ...base,
        offered: 1.5,
        changes: [
          { atMs: 10_000, capacity: 20 },
          { atMs: 20_000, capacity: 40 },
        ],
      },
      'adaptive',
    );
    const limitAt = (ms: number) => run.buckets.find((bucket) => bucket.atMs === ms)?.limit ?? Number.NaN;
    const before = limitAt(10_000);
    // Halved: within 5 s the limit is at most what the halved upstream takes at the tolerated latency, with headroom.
    expect(limitAt(15_000)).toBeLessThanOrEqual(before * 0.6);
    // Restored: within 10 s it is back where it was.
    expect(limitAt(30_000)).toBeGreaterThanOrEqual(before * 0.9);
  });

  it('with no overload, no request is shed once the limit has found its level (its first second)', () => {
    // Up to 80% of capacity; at 90% Poisson bursts overload the upstream for moments, and sheddable work may go.
    for (const offered of [0.3, 0.6, 0.8]) {
      const run = runAdaptiveLab({ ...base, offered, adaptive: { initial: 60 } }, 'adaptive');
      const settled = run.buckets.filter((bucket) => bucket.atMs > 1_000);
      expect(
        settled.reduce((sum, bucket) => sum + bucket.shed, 0),
        `offered ${offered}`,
      ).toBe(0);
      expect(run.shed.critical, `offered ${offered}`).toBe(0);
    }
  });
});
