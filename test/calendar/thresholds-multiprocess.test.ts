/**
 * Four OS processes check one key of a calendar rule with thresholds on one real Redis, at the
 * same time: each threshold is announced exactly once in all, by whichever process crossed it.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ThresholdEvent } from '../../src/index.js';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';
import { ask, useWorkerProcesses } from '../support/worker-processes.js';

const WORKER = fileURLToPath(new URL('../support/threshold-worker.ts', import.meta.url));
const PROCESSES = 4;

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});

const workers = useWorkerProcesses(WORKER, PROCESSES, () => [String(server.port)]);

describe('threshold events from 4 processes on one Redis', () => {
  it('announce each threshold exactly once, at its crossing', async () => {
    const limit = 100;
    const thresholds = [0.25, 0.5, 0.8, 1];
    // 4 × 40 checks: 100 admitted, so every threshold is crossed, by whichever process got there.
    const heard = await Promise.all(
      workers.map((worker) =>
        ask<ThresholdEvent[]>(worker, { prefix: 'th', key: 'tenant', checks: 40, limit, thresholds }),
      ),
    );
    const events = heard.flat().sort((a, b) => a.threshold - b.threshold);
    expect(
      events.map(({ threshold, used, limit: l, rule, key }) => ({ threshold, used, limit: l, rule, key })),
    ).toEqual([
      { threshold: 0.25, used: 25, limit, rule: 'daily', key: 'tenant' },
      { threshold: 0.5, used: 50, limit, rule: 'daily', key: 'tenant' },
      { threshold: 0.8, used: 80, limit, rule: 'daily', key: 'tenant' },
      { threshold: 1, used: 100, limit, rule: 'daily', key: 'tenant' },
    ]);
    // One period end for all: the next UTC midnight.
    const periodEnds = new Set(events.map((event) => event.periodEnd));
    expect(periodEnds.size).toBe(1);
    expect(([...periodEnds][0] as number) % 86_400_000).toBe(0);
  });
});
