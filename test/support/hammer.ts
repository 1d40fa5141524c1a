/**
 * A worker process for the multi-process test: `node --import tsx test/support/hammer.ts <port>`.
 * It connects to the Redis on <port>, prints `ready`, then for each JSON job read from stdin
 * runs `checks` checks of one key (`concurrency` in flight at once), or as many as fit in
 * `durationMs`, with this process's Date.now skewed by `skewMs`, and prints one JSON line of
 * counts. It exits when stdin ends.
 */

import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { type AlgorithmName, createLimiter, redisStore } from '../../src/index.js';
import { SLOW_MACHINE_TIMEOUT } from './timeouts.js';

export interface HammerJob {
  id: number;
  algorithm: AlgorithmName;
  limit: number;
  window: number;
  key: string;
  checks: number;
  /** Instead of `checks`: check in tight loops (`await limiter.check(key)`) for this long. */
  durationMs?: number;
  concurrency: number;
  skewMs: number;
  /** The limiter's store deadline, default SLOW_MACHINE_TIMEOUT. */
  timeout?: number;
  /** The rule's quotaLease; the limiter is closed (slices given back) before the result is printed. */
  quotaLease?: true | { max: number };
  /** Count admissions per aligned window of the real clock (which Redis TIME reads on this machine). */
  perWindow?: boolean;
  /** After printing the result, block this process (no timer runs, no slice goes back) until it is killed. */
  hold?: boolean;
}

export interface HammerResult {
  id: number;
  admitted: number;
  denied: number;
  /** Decisions not made by Redis (degraded). */
  degraded: number;
  errors: string[];
  /** What this process's Date.now said minus the real time, as seen during the job. */
  skewSeen: number;
  /** With `perWindow`: admissions by window number (real time / window), of checks begun and answered in one window. */
  perWindow?: Record<string, number>;
}

const realNow = Date.now.bind(Date);
/** Admissions this close to a window's boundary are attributed to no window (see lane). */
const EDGE_MS = 2;
let skewMs = 0;
Date.now = () => realNow() + skewMs;

const client = new Redis(Number(process.argv[2]), '127.0.0.1');
const store = redisStore({ client });

async function hammer(job: HammerJob): Promise<HammerResult> {
  skewMs = job.skewMs;
  const limiter = createLimiter({
    timeout: job.timeout ?? SLOW_MACHINE_TIMEOUT,
    store,
    prefix: 'hammer',
    rules: {
      name: 'r',
      algorithm: job.algorithm,
      limit: job.limit,
      window: job.window,
      ...(job.quotaLease === undefined ? {} : { quotaLease: job.quotaLease }),
    },
  });
  const result: HammerResult = { id: job.id, admitted: 0, denied: 0, degraded: 0, errors: [], skewSeen: 0 };
  const perWindow: Record<string, number> = {};
  const windowOf = (ms: number) => String(Math.floor(ms / job.window));
  let next = 0;
  const stopAt = job.durationMs === undefined ? undefined : performance.now() + job.durationMs;
  const more = () => (stopAt === undefined ? next < job.checks : performance.now() < stopAt);
  async function lane(): Promise<void> {
    while (more()) {
      next++;
      try {
        const began = realNow();
        const decision = await limiter.check(job.key);
        if (decision.allowed) {
          result.admitted++;
          if (job.perWindow === true) {
            // A check that spanned a boundary could belong to either window: it is not counted.
            // Nor is one within EDGE_MS of a boundary: quota slices expire on the monotonic
            // clock, which may disagree with Date.now by a millisecond (as compare --lease does).
            const ended = realNow();
            const window = windowOf(ended);
            const nearEdge = began % job.window < EDGE_MS || job.window - (ended % job.window) <= EDGE_MS;
            if (window === windowOf(began) && !nearEdge) perWindow[window] = (perWindow[window] ?? 0) + 1;
          }
        } else result.denied++;
        if (decision.degraded !== false) result.degraded++;
      } catch (error) {
        result.errors.push(String(error));
      }
    }
  }
  // Rounded: the two clock reads may straddle a millisecond tick.
  result.skewSeen = Math.round((Date.now() - realNow()) / 100) * 100;
  await Promise.all(Array.from({ length: job.concurrency }, lane));
  if (job.perWindow === true) result.perWindow = perWindow;
  if (job.quotaLease !== undefined && job.hold !== true) await limiter.close();
  return result;
}

await client.ping();
process.stdout.write('ready\n');
const jobs: Promise<void>[] = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const job = JSON.parse(line) as HammerJob;
  jobs.push(
    hammer(job).then((result) => {
      process.stdout.write(`${JSON.stringify(result)}\n`, () => {
        // Blocks the event loop, so no timer gives this process's slice back before it is killed.
        if (job.hold === true) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
      });
    }),
  );
}
await Promise.all(jobs);
client.disconnect();
