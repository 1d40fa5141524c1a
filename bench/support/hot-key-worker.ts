/**
 * One process of the hot-key scenario: `node --import tsx bench/support/hot-key-worker.ts '<json HotKeyJob>'`.
 * Checks one key in `lanes` loops for `seconds` through the built package on the bench's Redis,
 * counts admissions per aligned window of the real clock (Redis TIME reads the same clock on
 * this machine), closes the limiter (giving slices back) and prints one JSON line.
 */
import { Redis } from 'ioredis';
import { floodgate } from './floodgate.js';

export interface HotKeyJob {
  port: number;
  key: string;
  limit: number;
  windowMs: number;
  quotaLease: boolean;
  lanes: number;
  seconds: number;
}

export interface HotKeyResult {
  decisions: number;
  admitted: number;
  /** Admissions by window number (real ms / windowMs), of checks begun and answered in one window. */
  perWindow: Record<string, number>;
}

const job = JSON.parse(process.argv[2] ?? '') as HotKeyJob;
const client = new Redis(job.port, '127.0.0.1');
const limiter = floodgate.createLimiter({
  store: floodgate.redisStore({ client }),
  prefix: 'hot',
  timeout: '1s',
  rules: {
    name: 'hot',
    algorithm: 'fixed-window',
    limit: job.limit,
    window: job.windowMs,
    ...(job.quotaLease ? { quotaLease: true } : {}),
  },
});
const result: HotKeyResult = { decisions: 0, admitted: 0, perWindow: {} };
const stopAt = performance.now() + job.seconds * 1000;
async function lane(): Promise<void> {
  while (performance.now() < stopAt) {
    const began = Math.floor(Date.now() / job.windowMs);
    const decision = await limiter.check(job.key);
    result.decisions++;
    if (!decision.allowed) continue;
    result.admitted++;
    const window = Math.floor(Date.now() / job.windowMs);
    if (window === began) result.perWindow[window] = (result.perWindow[window] ?? 0) + 1;
  }
}
await client.ping();
await Promise.all(Array.from({ length: job.lanes }, lane));
await limiter.close();
client.disconnect();
process.stdout.write(`${JSON.stringify(result)}\n`);
