import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ceilingOf } from '../../src/adaptive/admission.js';
import { nextLimit } from '../../src/adaptive/gradient.js';
import { latencySamples } from '../../src/adaptive/samples.js';
import { type AdaptiveLimitOptions, createAdaptiveLimit } from '../../src/index.js';

const settings = { min: 2, max: 100, tolerance: 0.25, smoothing: 1, backoff: 0.9 };
const window = { noLoadMs: 10, peakInFlight: 20, dropped: false, saturated: false };

/** A limit on a hand-turned clock, with `run(n, latencyMs)` completing n requests of that latency. */
function handDriven(options: AdaptiveLimitOptions = {}) {
  let now = 0;
  const limit = createAdaptiveLimit({ eventLoop: false, random: () => 0.5, ...options, clock: () => now });
  return {
    limit,
    advance(ms: number) {
      now += ms;
    },
    /** `n` requests in flight together, each answered after `latencyMs`. */
    run(n: number, latencyMs: number, criticality: 'critical' | 'standard' | 'sheddable' = 'critical') {
      const admissions = Array.from({ length: n }, () => limit.acquire(criticality));
      now += latencyMs;
      for (const admission of admissions) admission?.success();
      return admissions.filter((admission) => admission === undefined).length;
    },
  };
}

describe('createAdaptiveLimit options', () => {
  it.each([
    [{ min: 0 }, 'createAdaptiveLimit: min: 0 must be an integer from 1 to 1000000'],
    [{ min: 10, max: 5 }, 'createAdaptiveLimit: max: 5 must be at least min (10)'],
    [{ initial: 2000 }, 'createAdaptiveLimit: initial: 2000 must be from min (1) to max (1000)'],
    [{ smoothing: 0 }, 'createAdaptiveLimit: smoothing: 0 must be a number in (0, 1]'],
    [{ tolerance: -1 }, 'createAdaptiveLimit: tolerance: -1 must be a number in [0, 10]'],
    [{ percentile: 100 }, 'createAdaptiveLimit: percentile: 100 must be a number in [1, 99]'],
    [{ backoff: 1 }, 'createAdaptiveLimit: backoff: 1 must be a number in (0, 1)'],
    [
      { criticalReserve: 0.6, standardReserve: 0.5 },
      'createAdaptiveLimit: criticalReserve + standardReserve: 1.1 must be at most 0.9 (sheddable requests need a share)',
    ],
    [
      { probeInterval: 'soon' },
      `createAdaptiveLimit: probeInterval: "soon" is not a duration; use a number of milliseconds or a string such as '500ms', '10s', '1m', '1h', '1d'`,
    ],
    [{ eventLoop: 2 }, 'createAdaptiveLimit: eventLoop: 2 must be a number in (0, 1]'],
    [{ clock: 5 }, 'createAdaptiveLimit: clock: 5 must be a function'],
    [{ windw: '1s' }, 'createAdaptiveLimit: unknown option'],
  ])('refuses %j', (options, message) => {
    expect(() => createAdaptiveLimit(options as AdaptiveLimitOptions)).toThrow(message);
  });

  it('refuses an unknown criticality at acquire', () => {
    expect(() => createAdaptiveLimit().acquire('urgent' as 'critical')).toThrow(
      'acquire: criticality "urgent" must be one of critical, standard, sheddable',
    );
  });
});

describe('the gradient', () => {
  it('shrinks by the ratio of the tolerated latency to the measured one, at most by half', () => {
    expect(nextLimit(40, { ...window, latencyMs: 25 }, settings)).toBeCloseTo(20);
    expect(nextLimit(40, { ...window, latencyMs: 1_000 }, settings)).toBe(20);
    expect(nextLimit(40, { ...window, latencyMs: 12.5 }, settings)).toBeGreaterThanOrEqual(40);
  });

  it('grows only when the window used at least half the limit, and not on a saturated event loop', () => {
    const fast = { ...window, latencyMs: 10 };
    expect(nextLimit(40, fast, settings)).toBeCloseTo(40 * 1.25 + Math.sqrt(40));
    expect(nextLimit(40, { ...fast, peakInFlight: 19 }, settings)).toBe(40);
    expect(nextLimit(40, { ...fast, saturated: true }, settings)).toBe(40);
  });

  it('backs off on a drop, stays within min and max, and moves by the smoothing share', () => {
    expect(nextLimit(40, { ...window, latencyMs: 10, dropped: true }, settings)).toBeCloseTo(36);
    expect(nextLimit(3, { ...window, latencyMs: 100 }, settings)).toBe(2);
    expect(nextLimit(90, { ...window, latencyMs: 5, peakInFlight: 90 }, settings)).toBe(100);
    expect(nextLimit(40, { ...window, latencyMs: 25 }, { ...settings, smoothing: 0.5 })).toBeCloseTo(30);
  });
});

describe('admission by criticality', () => {
  const reserves = { criticalReserve: 0.2, standardReserve: 0.1 };
  it('lets critical fill the limit, standard all but its reserve, sheddable least', () => {
    expect(ceilingOf(100, 'critical', reserves)).toBe(100);
    expect(ceilingOf(100, 'standard', reserves)).toBe(80);
    expect(ceilingOf(100, 'sheddable', reserves)).toBe(70);
    expect(ceilingOf(1, 'sheddable', reserves)).toBe(1);
  });

  it('sheds sheddable first, then standard, never past the limit, and counts both', () => {
    const { limit } = handDriven({ initial: 10 });
    const take = (criticality: 'critical' | 'standard' | 'sheddable') => limit.acquire(criticality);
    const held = [];
    for (let i = 0; i < 7; i++) held.push(take('sheddable'));
    expect(held.every(Boolean)).toBe(true);
    expect(take('sheddable')).toBeUndefined();
    held.push(take('standard'));
    expect(take('standard')).toBeUndefined();
    held.push(take('critical'), take('critical'));
    expect(take('critical')).toBeUndefined();
    expect(limit.stats()).toMatchObject({
      inFlight: 10,
      shed: { critical: 1, standard: 1, sheddable: 1 },
      admitted: { critical: 2, standard: 1, sheddable: 7 },
    });
    held[0]?.success();
    held[0]?.success(); // a second report does nothing
    expect(limit.stats().inFlight).toBe(9);
  });
});

describe('latency samples', () => {
  it('answers nearest-rank percentiles, and keeps a bounded sample of a large window', () => {
    const samples = latencySamples(Math.random);
    for (let i = 1; i <= 100; i++) samples.add(i);
    expect(samples.percentile(50)).toBe(50);
    expect(samples.percentile(99)).toBe(99);
    samples.clear();
    for (let i = 0; i < 100_000; i++) samples.add(i % 1000);
    expect(samples.count).toBe(100_000);
    expect(samples.percentile(50)).toBeGreaterThan(400);
    expect(samples.percentile(50)).toBeLessThan(600);
  });
});

describe('the no-load latency and its probe', () => {
  it('follows the upstream: slower answers shrink the limit, faster ones grow it back', () => {
    const driven = handDriven({ initial: 40, window: 100 });
    for (let i = 0; i < 10; i++) driven.run(30, 10);
    const settled = driven.limit.stats().limit;
    expect(driven.limit.stats().noLoadMs).toBe(10);
    for (let i = 0; i < 10; i++) driven.run(30, 30);
    expect(driven.limit.stats().limit).toBeLessThan(settled);
  });

  it('probes only under pressure, at its own concurrency (not the floor), and not before probeInterval', () => {
    const driven = handDriven({
      initial: 40,
      max: 60,
      min: 1,
      probeConcurrency: 6,
      probeInterval: 1_000,
      window: 100,
    });
    for (let i = 0; i < 200; i++) driven.run(15, 10);
    expect(driven.limit.stats().probing).toBe(false); // 2 s without a shed request: no probe
    for (let i = 0; i < 50 && !driven.limit.stats().probing; i++) driven.run(200, 10, 'sheddable');
    expect(driven.limit.stats()).toMatchObject({ probing: true, limit: 6 });
  });

  it('at its floor with nothing shed, never probes (a probe then would only shed)', () => {
    // Pinned (min = max): every window is "at the floor"; the load stays below it.
    const driven = handDriven({
      min: 50,
      initial: 50,
      max: 50,
      probeConcurrency: 4,
      probeInterval: 500,
      window: 100,
    });
    let shed = 0;
    for (let i = 0; i < 300; i++) shed += driven.run(20, 10, 'sheddable');
    expect(shed).toBe(0);
    expect(driven.limit.stats()).toMatchObject({ probing: false, limit: 50 });
  });

  it('a request admitted before a probe does not count in it', () => {
    const driven = handDriven({
      initial: 40,
      max: 60,
      probeConcurrency: 4,
      probeInterval: 500,
      probeSamples: 4,
      window: 100,
      percentile: 99, // one slow latency counted would be the probe's result
    });
    for (let i = 0; i < 60; i++) driven.run(20, 10);
    const slow = driven.limit.acquire('critical');
    for (let i = 0; i < 50 && !driven.limit.stats().probing; i++) driven.run(200, 10, 'sheddable');
    expect(driven.limit.stats().probing).toBe(true);
    driven.advance(300);
    slow?.success(); // admitted before the probe: ignored
    driven.run(4, 12);
    expect(driven.limit.stats()).toMatchObject({ probing: false, noLoadMs: 12 });
  });

  it('two processes probe at different times (jitter)', () => {
    const probeStart = (random: number) => {
      const driven = handDriven({
        initial: 40,
        max: 60,
        probeInterval: 10_000,
        probeJitter: 0.5,
        window: 100,
        random: () => random,
      });
      for (let at = 0; at < 20_000; at += 50) {
        driven.run(200, 50, 'sheddable');
        if (driven.limit.stats().probing) return at;
      }
      return Number.NaN;
    };
    expect(Math.abs(probeStart(0.1) - probeStart(0.9))).toBeGreaterThan(5_000);
  });
});

describe('on a real clock', () => {
  it('sheds an overload of slow work at once and lets the rest through', async () => {
    const limit = createAdaptiveLimit({ initial: 8, window: 50 });
    let shed = 0;
    const work = async () => {
      const admission = limit.acquire('standard');
      if (admission === undefined) {
        shed++;
        return;
      }
      await sleep(20);
      admission.success();
    };
    await Promise.all(Array.from({ length: 100 }, work));
    expect(shed).toBeGreaterThan(80);
    expect(limit.stats()).toMatchObject({ inFlight: 0 });
  });
});
