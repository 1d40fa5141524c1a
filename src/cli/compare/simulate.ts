/**
 * Runs one algorithm over one scenario on a simulated clock and measures what it admitted.
 * The same code drives the memory store and (with `--redis`) the Redis store, whose script is
 * given the simulated time, so both see identical traffic.
 */
import { type AlgorithmName, createLimiter, type Store } from '../../index.js';
import type { Scenario } from './scenarios.js';

export interface RuleParams {
  algorithm: AlgorithmName;
  limit: number;
  windowMs: number;
  /** token-bucket and gcra only. */
  burst?: number;
}

/** Checks per batch: checks in a batch are issued back to back (pipelined on Redis), then awaited. */
const BATCH = 2000;

/**
 * Feeds the scenario to a limiter built on `makeStore(clock)` and returns 1 (admitted) or 0 per
 * arrival. The clock is set before each check is issued; both stores read it synchronously when
 * a check is issued, so issuing a batch without awaiting each check keeps the order and the times.
 */
export async function runScenario(
  scenario: Scenario,
  rule: RuleParams,
  makeStore: (clock: () => number) => Store,
  options: { start: number; prefix: string; onProgress?: (done: number) => void },
): Promise<Uint8Array> {
  let now = options.start;
  const limiter = createLimiter({
    store: makeStore(() => now),
    prefix: options.prefix,
    // Every decision must come from the store: no local deny cache, no deadline or breaker
    // turning a slow batch into fail-open answers.
    denyCache: false,
    breaker: false,
    timeout: '10m',
    // The lab counts the store's calls and keys per decision: no heavy hitters merged beside them.
    topKeys: 0,
    rules: {
      name: 'compare',
      algorithm: rule.algorithm,
      limit: rule.limit,
      window: rule.windowMs,
      ...(rule.burst !== undefined && (rule.algorithm === 'token-bucket' || rule.algorithm === 'gcra')
        ? { burst: rule.burst }
        : {}),
    },
  });
  const { times, keys, keyNames } = scenario;
  const allowed = new Uint8Array(times.length);
  let pending: Promise<void>[] = [];
  for (let i = 0; i < times.length; i++) {
    now = options.start + (times[i] as number);
    const index = i;
    pending.push(
      limiter.check(keyNames[keys[i] as number] as string).then((decision) => {
        allowed[index] = decision.allowed ? 1 : 0;
      }),
    );
    if (pending.length === BATCH || i === times.length - 1) {
      await Promise.all(pending);
      pending = [];
      options.onProgress?.(i + 1);
    }
  }
  return allowed;
}

export interface Measured {
  requests: number;
  admitted: number;
  rejected: number;
  /** Most requests of one client admitted in any interval of one window. */
  maxInWindow: number;
  /** Most requests of one client admitted in any interval of `burstWindowMs`. */
  maxInBurstWindow: number;
  /** Admitted here, denied by the exact sliding log run on the same traffic (request by request). */
  falseAllows: number;
  /** Denied here, admitted by the exact sliding log run on the same traffic. */
  falseDenies: number;
  /**
   * Admissions that put their client over the limit: the exact rule (at most `limit` in any
   * window), applied to this algorithm's own admissions, would have refused them.
   */
  overLimit: number;
  /** Refusals that the exact rule, applied to this algorithm's own admissions, would have admitted. */
  refusedWithinLimit: number;
}

/**
 * Measures admitted traffic: per client, the most admissions in any half-open interval
 * (t − length, t] for the window and the burst window; the disagreements with the sliding log's
 * run (`reference`); and each decision judged by the exact rule on the algorithm's own history.
 */
export function measure(
  scenario: Scenario,
  allowed: Uint8Array,
  reference: Uint8Array,
  limit: number,
  windowMs: number,
  burstWindowMs: number,
): Measured {
  const { times, keys } = scenario;
  const admittedTimes: number[][] = scenario.keyNames.map(() => []);
  const windowHead = new Array<number>(scenario.keyNames.length).fill(0);
  const burstHead = new Array<number>(scenario.keyNames.length).fill(0);
  let admitted = 0;
  let maxInWindow = 0;
  let maxInBurstWindow = 0;
  let falseAllows = 0;
  let falseDenies = 0;
  let overLimit = 0;
  let refusedWithinLimit = 0;
  for (let i = 0; i < times.length; i++) {
    const ok = allowed[i] === 1;
    const logOk = reference[i] === 1;
    if (ok && !logOk) falseAllows++;
    if (!ok && logOk) falseDenies++;
    const t = times[i] as number;
    const key = keys[i] as number;
    const list = admittedTimes[key] as number[];
    let head = windowHead[key] as number;
    while (head < list.length && (list[head] as number) <= t - windowMs) head++;
    windowHead[key] = head;
    const exactOk = list.length - head + 1 <= limit;
    if (ok && !exactOk) overLimit++;
    if (!ok && exactOk) refusedWithinLimit++;
    if (!ok) continue;
    admitted++;
    list.push(t);
    maxInWindow = Math.max(maxInWindow, list.length - head);
    let burst = burstHead[key] as number;
    while ((list[burst] as number) <= t - burstWindowMs) burst++;
    burstHead[key] = burst;
    maxInBurstWindow = Math.max(maxInBurstWindow, list.length - burst);
  }
  return {
    requests: times.length,
    admitted,
    rejected: times.length - admitted,
    maxInWindow,
    maxInBurstWindow,
    falseAllows,
    falseDenies,
    overLimit,
    refusedWithinLimit,
  };
}

/** Per time bucket, for the chart: one client's admitted and rejected requests and its fullest window. */
export interface Series {
  bucketMs: number;
  admitted: number[];
  rejected: number[];
  /** The most requests admitted in the trailing window at any moment of the bucket. */
  inWindow: number[];
}

export function series(scenario: Scenario, allowed: Uint8Array, windowMs: number, buckets: number): Series {
  const bucketMs = scenario.durationMs / buckets;
  const admitted = new Array<number>(buckets).fill(0);
  const rejected = new Array<number>(buckets).fill(0);
  const inWindow = new Array<number>(buckets).fill(0);
  const focusTimes: number[] = [];
  for (let i = 0; i < scenario.times.length; i++) {
    if (scenario.keys[i] !== scenario.focusKey) continue;
    const t = scenario.times[i] as number;
    const bucket = Math.min(buckets - 1, Math.floor(t / bucketMs));
    if (allowed[i] === 1) {
      admitted[bucket] = (admitted[bucket] as number) + 1;
      focusTimes.push(t);
    } else {
      rejected[bucket] = (rejected[bucket] as number) + 1;
    }
  }
  // Admissions in (x − window, x]: at bucket starts and at every admission.
  const countAt = (x: number) => upperBound(focusTimes, x) - upperBound(focusTimes, x - windowMs);
  for (let b = 0; b < buckets; b++) inWindow[b] = countAt(b * bucketMs);
  for (const t of focusTimes) {
    const bucket = Math.min(buckets - 1, Math.floor(t / bucketMs));
    inWindow[bucket] = Math.max(inWindow[bucket] as number, countAt(t));
  }
  return { bucketMs, admitted, rejected, inWindow };
}

/** Index of the first element greater than `x` in an ascending list. */
function upperBound(list: readonly number[], x: number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((list[mid] as number) <= x) low = mid + 1;
    else high = mid;
  }
  return low;
}
