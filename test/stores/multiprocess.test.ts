/**
 * Several OS processes hammer one key on one real Redis at once: exactly `limit` requests are
 * admitted, and still exactly `limit` when the processes' own clocks disagree by seconds (the
 * script decides on the server's clock). Windows are chosen so that a client-clock limiter
 * would over-admit with the skews used, and so that nothing refills or expires (by the server
 * clock) during a run; a run that takes too long for that, or straddles a window boundary, is
 * detected with Redis TIME and repeated.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { AlgorithmName } from '../../src/index.js';
import type { HammerJob, HammerResult } from '../support/hammer.js';
import { useHammerWorkers, type Worker } from '../support/hammer-workers.js';
import { redisTimeMs } from '../support/redis-time.js';

const PROCESSES = 4;
const CHECKS = 100;
const LIMIT = 50;

interface Case {
  algorithm: AlgorithmName;
  window: number;
  /** Longest run (server time) during which nothing refills or expires. */
  exactForMs: number;
  /** Whether the run must also stay inside one clock-aligned window. */
  aligned: boolean;
}

const CASES: Case[] = [
  // Entries leave after 4 s: with clocks 6 s apart a client-clock log would drop the others' entries.
  { algorithm: 'sliding-log', window: 4000, exactForMs: 3990, aligned: false },
  // One token per 2.4 s: clocks 6 s apart would refill two tokens.
  { algorithm: 'token-bucket', window: 120_000, exactForMs: 2390, aligned: false },
  { algorithm: 'gcra', window: 120_000, exactForMs: 2390, aligned: false },
  { algorithm: 'fixed-window', window: 60_000, exactForMs: 60_000, aligned: true },
  { algorithm: 'sliding-window', window: 60_000, exactForMs: 60_000, aligned: true },
];

let client: Redis;
let workers: Worker[] = [];
let jobs = 0;

useHammerWorkers(PROCESSES, (started) => {
  ({ client, workers } = started);
});

/** All workers hammer one fresh key at once; repeated while a run is too long to be exact. */
async function hammerOneKey(
  testCase: Case,
  skews: number[],
  job: Partial<HammerJob> = {},
): Promise<HammerResult[]> {
  for (let attempt = 0; ; attempt++) {
    const key = `${testCase.algorithm}-${jobs}`;
    const before = await redisTimeMs(client);
    const results = await Promise.all(
      workers.map((worker, i) =>
        worker.run({
          id: jobs++,
          algorithm: testCase.algorithm,
          limit: LIMIT,
          window: testCase.window,
          key,
          checks: CHECKS,
          concurrency: 4,
          skewMs: skews[i] as number,
          ...job,
        }),
      ),
    );
    const after = await redisTimeMs(client);
    const straddled =
      testCase.aligned && Math.floor(before / testCase.window) !== Math.floor(after / testCase.window);
    if (!straddled && after - before < testCase.exactForMs) return results;
    if (attempt >= 3) throw new Error(`no run of ${testCase.algorithm} fit in ${testCase.exactForMs} ms`);
  }
}

describe.each([
  { clocks: 'in agreement', skews: [0, 0, 0, 0] },
  { clocks: 'skewed by -3 s / +3 s', skews: [-3000, 3000, -3000, 3000] },
])(`${PROCESSES} processes × ${CHECKS} checks of one key, clocks $clocks`, ({ skews }) => {
  it.each(CASES)(`$algorithm admits exactly ${LIMIT}`, async (testCase) => {
    const results = await hammerOneKey(testCase, skews);
    expect(results.flatMap((result) => result.errors)).toEqual([]);
    expect(results.map((result) => result.skewSeen)).toEqual(skews);
    const admitted = results.reduce((total, result) => total + result.admitted, 0);
    const denied = results.reduce((total, result) => total + result.denied, 0);
    expect({ admitted, denied }).toEqual({ admitted: LIMIT, denied: PROCESSES * CHECKS - LIMIT });
  });
});

describe(`${PROCESSES} processes in tight loops on one key, clocks skewed by -2 s / +2 s`, () => {
  // A deadline far above Redis's latency on a loaded machine, far below the loops' 2 s: a process
  // that starved its own event loop would still see its replies as timed out.
  it(`regression: 16 loops each for 2 s admit exactly ${LIMIT}, none degraded`, async () => {
    const sliding = CASES.find((testCase) => testCase.algorithm === 'sliding-window') as Case;
    const skews = [-2000, 2000, -2000, 2000];
    const results = await hammerOneKey(sliding, skews, { concurrency: 16, durationMs: 2000, timeout: 1000 });
    expect(results.flatMap((result) => result.errors)).toEqual([]);
    expect(results.map((result) => result.skewSeen)).toEqual(skews);
    const admitted = results.reduce((total, result) => total + result.admitted, 0);
    const degraded = results.reduce((total, result) => total + result.degraded, 0);
    expect({ admitted, degraded }).toEqual({ admitted: LIMIT, degraded: 0 });
  });
});
