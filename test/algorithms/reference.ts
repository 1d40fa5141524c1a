/**
 * Brute-force references: each algorithm restated from its definition over the full list of
 * admitted requests, with none of the implementation's state, shortcuts or scaling tricks.
 * The property tests hold the real algorithms (memory and Redis) to these.
 */
import type { AlgorithmName } from '../../src/index.js';

/** One admitted request. */
export interface Admitted {
  readonly at: number;
  readonly cost: number;
}

export interface Params {
  readonly limit: number;
  readonly windowMs: number;
  /** `burst` for token-bucket and gcra, else `limit`. */
  readonly capacity: number;
}

export interface Reference {
  /** Whether a request of `cost` at `now` is admitted, by the algorithm's defining formula. */
  allows(history: readonly Admitted[], now: number, cost: number, params: Params): boolean;
  /** Whole units available at `now` with nothing else arriving (a decision's `remaining` before it). */
  remaining(history: readonly Admitted[], now: number, params: Params): number;
}

const sum = (history: readonly Admitted[], from: number, to: number): number => {
  let total = 0;
  for (const { at, cost } of history) if (at >= from && at < to) total += cost;
  return total;
};

const alignedStart = (now: number, windowMs: number): number => now - (now % windowMs);

/** Admitted cost in (now − W, now]. */
const slidingLog: Reference = {
  allows: (history, now, cost, { limit, windowMs }) =>
    sum(history, now - windowMs + 1, now + 1) + cost <= limit,
  remaining: (history, now, { limit, windowMs }) =>
    Math.max(0, limit - sum(history, now - windowMs + 1, now + 1)),
};

/** Admitted cost in the clock-aligned window holding `now`. */
const fixedWindow: Reference = {
  allows: (history, now, cost, { limit, windowMs }) => {
    const start = alignedStart(now, windowMs);
    return sum(history, start, start + windowMs) + cost <= limit;
  },
  remaining: (history, now, { limit, windowMs }) => {
    const start = alignedStart(now, windowMs);
    return Math.max(0, limit - sum(history, start, start + windowMs));
  },
};

/** curr and prev from the admitted list; used (scaled by W) = curr·W + prev·(W − elapsed). */
function slidingWindowUse(history: readonly Admitted[], now: number, windowMs: number) {
  const start = alignedStart(now, windowMs);
  const curr = sum(history, start, start + windowMs);
  const prev = sum(history, start - windowMs, start);
  return { curr, prev, elapsed: now - start };
}

const slidingWindow: Reference = {
  allows: (history, now, cost, { limit: L, windowMs: W }) => {
    const { curr, prev, elapsed } = slidingWindowUse(history, now, W);
    return (curr + cost) * W + prev * (W - elapsed) <= L * W;
  },
  remaining: (history, now, { limit: L, windowMs: W }) => {
    const { curr, prev, elapsed } = slidingWindowUse(history, now, W);
    return Math.max(0, Math.floor((L * W - curr * W - prev * (W - elapsed)) / W));
  },
};

/**
 * Tokens scaled by W, by the min-plus formula of a capped bucket:
 * T(t) = min(full, min_j(full + (t − t_j)·L − Σ_{i>=j} c_i·W)), full = burst·W.
 */
export function bucketTokens(history: readonly Admitted[], now: number, params: Params): number {
  const { limit: L, windowMs: W, capacity: B } = params;
  const full = B * W;
  let tokens = full;
  let suffix = 0;
  for (let j = history.length - 1; j >= 0; j--) {
    const { at, cost } = history[j] as Admitted;
    suffix += cost * W;
    tokens = Math.min(tokens, full + (now - at) * L - suffix);
  }
  return tokens;
}

const tokenBucket: Reference = {
  allows: (history, now, cost, params) => bucketTokens(history, now, params) >= cost * params.windowMs,
  remaining: (history, now, params) => Math.floor(bucketTokens(history, now, params) / params.windowMs),
};

/** The rate algorithms (concurrency holds slots instead; its cases are in the specification table). */
export type RateAlgorithm = Exclude<AlgorithmName, 'concurrency'>;

export const REFERENCES: Readonly<Record<RateAlgorithm, Reference>> = {
  'fixed-window': fixedWindow,
  'sliding-log': slidingLog,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  // GCRA is defined to admit what the token bucket admits; its own test compares the two directly.
  gcra: tokenBucket,
};
