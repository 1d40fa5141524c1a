/**
 * Issue 37's upstream target: 50 workers in 4 OS processes on one Redis call a mock upstream that
 * allows 60 requests and 100,000 tokens a window (a minute scaled to a second) and answers with
 * OpenAI's headers, the schedulers' own rules twice as loose: no 429 once an answer has revealed
 * the budget, and the budget used while work waits.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { ask, useWorkerProcesses } from '../support/worker-processes.js';

const WORKER = fileURLToPath(new URL('../support/upstream-worker.ts', import.meta.url));
const PROCESSES = 4;
const WORKERS = 50;
const REQUESTS = 60;
const WINDOW_MS = 1000;
const WINDOWS = 4;

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});
const workers = useWorkerProcesses(WORKER, PROCESSES, () => [String(server.port)]);

let runs = 0;

/** Runs the fleet for WINDOWS windows of the upstream; `prepMs`: work between a grant and its call, at most. */
async function fleet(prepMs: number): Promise<{ upstream: MockUpstream; stallMs: number }> {
  const upstream = await startMockUpstream({ requests: REQUESTS, tokens: 100_000, windowMs: WINDOW_MS });
  const run = {
    prefix: `fleet${runs++}`,
    url: upstream.url,
    untilMs: Date.now() + WINDOWS * WINDOW_MS,
    requests: 2 * REQUESTS,
    tokens: 200_000,
    windowMs: WINDOW_MS,
    prepMs,
  };
  const stalls = await Promise.all(
    workers.map(async (worker, index) => {
      const own = Math.floor(WORKERS / PROCESSES) + (index < WORKERS % PROCESSES ? 1 : 0);
      return (await ask<{ stallMs: number }>(worker, { ...run, workers: own, seed: index + 1 })).stallMs;
    }),
  );
  await upstream.close();
  return { upstream, stallMs: Math.max(...stalls) };
}

/** 429s to calls that reached the upstream after its first answer (which reveals the budget). */
function limitedAfterFirstAnswer(upstream: MockUpstream): number {
  const first = upstream.answers.find((answer) => answer.status === 200)?.atMs ?? 0;
  return upstream.answers.filter((answer) => answer.status !== 200 && answer.atMs > first).length;
}

/** Calls that reached the upstream after its first answer. */
function callsAfterFirstAnswer(upstream: MockUpstream): number {
  const first = upstream.answers.find((answer) => answer.status === 200)?.atMs ?? 0;
  return upstream.answers.filter((answer) => answer.atMs > first).length;
}

/** A process stalled a quarter window (a loaded machine) could not call: the budget used says nothing then. */
const STALL_MS = 250;

/** Served per window, for the windows after the first (the processes start during it) until the run's end. */
function servedPerWindow(upstream: MockUpstream): number[] {
  return Array.from(
    { length: WINDOWS - 1 },
    (_, index) =>
      upstream.answers.filter(
        (answer) => answer.status === 200 && Math.floor(answer.atMs / WINDOW_MS) === index + 1,
      ).length,
  );
}

describe('50 workers in 4 processes against an upstream with OpenAI headers', () => {
  it('draw no 429 after the first answer, and use at least 95% of the budget', async () => {
    const { upstream, stallMs } = await fleet(0);
    expect(limitedAfterFirstAnswer(upstream)).toBe(0);
    if (stallMs < STALL_MS) {
      const served = servedPerWindow(upstream);
      // Issue 37's target over the run's full windows: at least 95% of the upstream's budget.
      expect(served.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(0.95 * REQUESTS * served.length);
    }
  }, 20_000);

  it('draw few 429s when calls reach the upstream out of grant order (up to 200 ms between grant and call)', async () => {
    // Answers then come back out of grant order too: a later grant's answer may count fewer calls.
    // Calls granted in a window's last 200 ms may land in the next one, before any answer of it
    // has revealed its budget: a few 429s then (in a dozen runs on a quiet machine: 0 to 7 of about
    // 240 calls; docs/scheduler.md, Bounds). The bound: under 5% of the calls after the first answer.
    const { upstream, stallMs } = await fleet(200);
    // A process stalled past a quarter window holds a granted call longer than the scenario's
    // 200 ms, into the upstream's next window: the scenario no longer holds, so neither does its bound.
    if (stallMs < STALL_MS) {
      expect(limitedAfterFirstAnswer(upstream)).toBeLessThan(0.05 * callsAfterFirstAnswer(upstream));
      for (const served of servedPerWindow(upstream)) expect(served).toBeGreaterThanOrEqual(0.8 * REQUESTS);
    }
  }, 20_000);
});
