/**
 * Four OS processes schedule jobs on one key of one real Redis: the grants in every window of the
 * rule are at most its limit, and every window while work waits is used in full.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, useRedisServer } from '../support/redis-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORKER = fileURLToPath(new URL('../support/scheduler-worker.ts', import.meta.url));
const PROCESSES = 4;

let server: RedisServer;
useRedisServer((started) => {
  server = started.server;
});

interface Worker {
  readonly child: ChildProcess;
  readonly lines: AsyncIterator<string>;
}
const workers: Worker[] = [];

beforeAll(async () => {
  for (let i = 0; i < PROCESSES; i++) {
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER, String(server.port)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe('ready');
    workers.push({ child, lines });
  }
});

afterAll(() => {
  for (const { child } of workers) child.stdin?.end();
});

describe('schedulers in 4 processes on one Redis', () => {
  it('grant at most the limit in every window, and use every window in full while work waits', async () => {
    const limit = 10;
    const perProcess = 15;
    const answers = await Promise.all(
      workers.map(async ({ child, lines }) => {
        child.stdin?.write(
          `${JSON.stringify({ prefix: 'mp', key: 'k', jobs: perProcess, limit, windowMs: 500 })}\n`,
        );
        return JSON.parse((await lines.next()).value as string) as number[];
      }),
    );
    const perWindow = new Map<number, number>();
    for (const window of answers.flat()) perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
    const counts = [...perWindow.entries()].sort(([a], [b]) => a - b).map(([, count]) => count);
    // 60 jobs, 10 a window: six consecutive full windows.
    expect(counts).toEqual([10, 10, 10, 10, 10, 10]);
    const windows = [...perWindow.keys()].sort((a, b) => a - b);
    expect((windows.at(-1) as number) - (windows[0] as number)).toBe(5);
  });
});
