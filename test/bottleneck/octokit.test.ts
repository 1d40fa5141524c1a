/**
 * Octokit for real: @octokit/plugin-throttling, given floodgate/bottleneck and a Redis connection
 * (`throttle: { Bottleneck, connection }`), throttles 4 OS processes against a local mock of
 * GitHub's limits. The plugin holds GitHub's secondary limits (10 requests in flight, one write a
 * second) in Bottleneck groups; with the connection those are one fleet-wide limit, so the mock
 * sees no request past them, while 4 processes on their own would send 4 times as many. The
 * primary limit and a secondary limit answered on purpose are waited out before the retry.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type MockGitHub, startMockGitHub } from '../support/mock-github.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { ask, useWorkerProcesses } from '../support/worker-processes.js';

const WORKER = fileURLToPath(new URL('../support/octokit-worker.ts', import.meta.url));
const PROCESSES = 4;

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});
const workers = useWorkerProcesses(WORKER, PROCESSES, () => [String(server.port)]);

let github: MockGitHub | undefined;
afterEach(async () => {
  await github?.close();
});

interface Answer {
  statuses: (number | string)[];
  limits: string[];
}

describe('@octokit/plugin-throttling on floodgate/bottleneck in 4 processes on one Redis', () => {
  it("sends nothing past GitHub's secondary limits, and waits out the limits it is told of", async () => {
    const mock = await startMockGitHub({
      maxConcurrent: 10,
      // The plugin spaces writes by 1000 ms at its grant; arrivals may be a little closer.
      writeSpacingMs: 900,
      latencyMs: 80,
      primaryResetMs: 500,
    });
    github = mock;
    // Reads first, then writes: the plugin spaces writes at their grant, and a write granted while
    // reads fill the fleet's 10 slots waits for one, so writes sent among reads arrive closer.
    const ordered = (order: (i: number) => object) =>
      Promise.all(workers.map((worker, i) => ask<Answer>(worker, { url: mock.url, ...order(i) })));
    const reads = await ordered(() => ({ reads: 12, writes: 0, limited: false }));
    const writes = await ordered((i) => ({ reads: 0, writes: 1, limited: i === 0 }));
    for (const answer of reads) expect(answer.statuses).toEqual(Array(12).fill(200));
    for (const [i, answer] of writes.entries()) {
      expect(answer.statuses).toEqual([201, ...(i === 0 ? [200, 200] : [])]);
    }
    expect(mock.violations).toEqual([]);
    // The fleet used the concurrency it has, not one process's share of it.
    expect(mock.mostInFlight()).toBeGreaterThanOrEqual(4);
    expect(mock.mostInFlight()).toBeLessThanOrEqual(10);
    expect(mock.arrivals.get('/repos/o/r/labels')).toHaveLength(PROCESSES);

    const [primary, primaryRetry] = mock.arrivals.get('/limited/primary') ?? [];
    expect(primaryRetry).toBeGreaterThanOrEqual(mock.primaryReset() as number);
    const [secondary, secondaryRetry] = mock.arrivals.get('/limited/secondary') ?? [];
    expect((secondaryRetry as number) - (secondary as number)).toBeGreaterThanOrEqual(1000);
    expect(primary).toBeDefined();
    expect(writes[0]?.limits.sort()).toEqual([expect.stringMatching(/^primary \d+$/), 'secondary 1']);
  }, 30_000);
});
