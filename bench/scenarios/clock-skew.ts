/**
 * The article's clock-skew flaw, reproduced. Three gateway "pods" (each its own Redis client)
 * whose clocks read -2 s, 0 and +2 s share one limit of 100 per window, under steady demand of
 * 4.5x the limit. A sliding log fed by client clocks lets the fastest pod trim the others' entries
 * early, so more than the limit gets through; Floodgate decides on the Redis server's clock.
 *
 * Client-clock rows run in virtual time (the clock is only an argument), so long windows take
 * no wall time; the last row runs Floodgate on the real Redis TIME, in real time.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { type ArticleCheck, articleCommand } from '../peers/article.js';
import type { BenchContext } from '../support/context.js';
import { floodgate } from '../support/floodgate.js';
import { connect } from '../support/redis.js';

const { createLimiter, redisStore } = floodgate;

export const SKEW_LIMIT = 100;
export const SKEWS_MS = [-2000, 0, 2000] as const;
/** Requests each pod sends per window: three pods send 4.5x the limit. */
const PER_POD_PER_WINDOW = 150;
const WINDOWS_RUN = 3;

export interface SkewRow {
  limiter: string;
  clocks: string;
  windowMs: number;
  /** Most requests admitted in any interval of one window (in real time: surely inside one window). */
  maxAdmitted: number;
  /** Real time only: the most that might have been inside one window, given the round trips' spans. */
  maxPossible?: number;
  sent: number;
}

/** A pod decides for a request at true time `now` (ms); the decider applies the pod's skew, or not. */
type Decide = (pod: number, now: number) => Promise<boolean>;

/** Most entries of sorted `times` inside any interval (t - span, t]. */
function maxInWindow(times: readonly number[], span: number): number {
  let best = 0;
  let first = 0;
  for (let last = 0; last < times.length; last++) {
    while ((times[first] as number) <= (times[last] as number) - span) first++;
    best = Math.max(best, last - first + 1);
  }
  return best;
}

/** Steady demand from the three pods, in virtual time starting at `epoch`. */
async function simulate(
  windowMs: number,
  epoch: number,
  decide: Decide,
): Promise<{ admitted: number[]; sent: number }> {
  const spacing = windowMs / PER_POD_PER_WINDOW;
  const admitted: number[] = [];
  let sent = 0;
  for (let tick = 0; tick < PER_POD_PER_WINDOW * WINDOWS_RUN; tick++) {
    for (let pod = 0; pod < SKEWS_MS.length; pod++) {
      const now = Math.floor(epoch + tick * spacing + (pod * spacing) / SKEWS_MS.length);
      sent++;
      if (await decide(pod, now)) admitted.push(now);
    }
  }
  return { admitted, sent };
}

function floodgatePods(pods: readonly Redis[], windowMs: number, clock?: (pod: number) => number) {
  return pods.map((client, pod) =>
    createLimiter({
      prefix: 'skew',
      rules: { name: 'api', algorithm: 'sliding-log', limit: SKEW_LIMIT, window: windowMs },
      store: redisStore(clock === undefined ? { client } : { client, clock: () => clock(pod) }),
    }),
  );
}

async function virtualRows(
  context: BenchContext,
  pods: readonly Redis[],
  article: readonly ArticleCheck[],
  windowMs: number,
): Promise<SkewRow[]> {
  const epoch = Date.now();
  const rows: SkewRow[] = [];
  let podNow = 0;
  const cases: { limiter: string; clocks: string; decide: Decide }[] = [
    {
      limiter: "article's script",
      clocks: 'pods -2 s, 0, +2 s',
      decide: async (pod, now) =>
        ((await article[pod]?.('skew:article', now + (SKEWS_MS[pod] as number), windowMs, SKEW_LIMIT)) ??
          [])[0] === 1,
    },
    {
      limiter: "article's script",
      clocks: 'pods in agreement (control)',
      decide: async (pod, now) =>
        ((await article[pod]?.('skew:article', now, windowMs, SKEW_LIMIT)) ?? [])[0] === 1,
    },
  ];
  const skewed = floodgatePods(pods, windowMs, (pod) => podNow + (SKEWS_MS[pod] as number));
  cases.push({
    limiter: 'floodgate sliding-log',
    clocks: 'pods -2 s, 0, +2 s (fed client clocks on purpose)',
    decide: async (pod, now) => {
      podNow = now;
      return (await skewed[pod]?.check('key'))?.allowed === true;
    },
  });
  const shared = floodgatePods(pods, windowMs, () => podNow);
  cases.push({
    limiter: 'floodgate sliding-log',
    clocks: 'one clock for all pods (as with Redis TIME)',
    decide: async (pod, now) => {
      podNow = now;
      return (await shared[pod]?.check('key'))?.allowed === true;
    },
  });
  for (const { limiter, clocks, decide } of cases) {
    await context.admin.flushall();
    const { admitted, sent } = await simulate(windowMs, epoch, decide);
    rows.push({ limiter, clocks, windowMs, maxAdmitted: maxInWindow(admitted, windowMs), sent });
  }
  return rows;
}

/** In real time an admission's server instant is only known to lie between send and reply. */
interface Span {
  sent: number;
  received: number;
}

/**
 * Bounds on the most admissions inside one window: `certain` counts admissions whose whole round
 * trips fit in one window (so their instants surely did), `possible` those whose round trips
 * reach into one window. The best window can be taken to start at a send (certain) or at a reply
 * (possible); n is a few hundred, so the quadratic scan is instant.
 */
function windowBounds(spans: readonly Span[], windowMs: number): { certain: number; possible: number } {
  let certain = 0;
  let possible = 0;
  for (const a of spans) {
    let surely = 0;
    let maybe = 0;
    for (const b of spans) {
      if (b.sent >= a.sent && b.received < a.sent + windowMs) surely++;
      if (b.received >= a.received && b.sent < a.received + windowMs) maybe++;
    }
    certain = Math.max(certain, surely);
    possible = Math.max(possible, maybe);
  }
  return { certain, possible };
}

/** Floodgate on the real Redis TIME: the pods' own clocks are never consulted. */
async function realRow(context: BenchContext, pods: readonly Redis[]): Promise<SkewRow> {
  const windowMs = context.settings.skewRealWindowMs;
  await context.admin.flushall();
  const limiters = floodgatePods(pods, windowMs);
  const spacing = windowMs / PER_POD_PER_WINDOW;
  const admitted: Span[] = [];
  let sent = 0;
  const start = performance.now();
  for (let tick = 0; tick < PER_POD_PER_WINDOW * 2.5; tick++) {
    await Promise.all(
      limiters.map(async (limiter) => {
        const before = performance.now();
        const decision = await limiter.check('key');
        sent++;
        if (decision.allowed) admitted.push({ sent: before, received: performance.now() });
      }),
    );
    const wait = start + (tick + 1) * spacing - performance.now();
    if (wait > 0) await sleep(wait);
  }
  // The limiter's clock is whole milliseconds (TIME floored): instants less than W - 1 ms apart
  // are surely inside one of its windows, while two 999.1 ms apart may both count for W = 1000.
  const { certain } = windowBounds(admitted, windowMs - 1);
  const { possible } = windowBounds(admitted, windowMs);
  return {
    limiter: 'floodgate sliding-log',
    clocks: 'Redis TIME, real time (pods skewed -2 s, 0, +2 s, unused)',
    windowMs,
    maxAdmitted: certain,
    maxPossible: possible,
    sent,
  };
}

export async function runClockSkew(context: BenchContext): Promise<SkewRow[]> {
  const pods = await Promise.all(SKEWS_MS.map(() => connect(context.server)));
  try {
    const article = pods.map(articleCommand);
    const rows: SkewRow[] = [];
    for (const windowMs of context.settings.skewWindowsMs)
      rows.push(...(await virtualRows(context, pods, article, windowMs)));
    rows.push(await realRow(context, pods));
    for (const row of rows)
      context.log(
        `clock-skew ${row.limiter.padEnd(22)} ${row.clocks.padEnd(58)} W=${row.windowMs} ms  admitted ${row.maxAdmitted}${row.maxPossible === undefined ? '' : ` (possibly ${row.maxPossible})`} / ${SKEW_LIMIT}`,
      );
    return rows;
  } finally {
    for (const pod of pods) pod.disconnect();
  }
}
