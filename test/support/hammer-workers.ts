/**
 * Starts hammer workers (test/support/hammer.ts), one OS process each, and sends them jobs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import type { HammerJob, HammerResult } from './hammer.js';
import { type RedisServer, useRedisServer } from './redis-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HAMMER = fileURLToPath(new URL('./hammer.ts', import.meta.url));

export interface Worker {
  /** The worker's process (to kill it mid-job). */
  readonly child: ChildProcess;
  run(job: HammerJob): Promise<HammerResult>;
  stop(): Promise<void>;
}

export function startWorker(port: number): Promise<Worker> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', HAMMER, String(port)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const pending = new Map<
    number,
    { resolve: (result: HammerResult) => void; reject: (error: Error) => void }
  >();
  const exited = once(child, 'exit');
  return new Promise((resolve, reject) => {
    void exited.then(() => {
      const error = new Error(`hammer worker exited: ${stderr}`);
      reject(error);
      for (const { reject: rejectJob } of pending.values()) rejectJob(error);
    });
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line === 'ready') {
        resolve({
          child,
          run(job) {
            return new Promise((resolveJob, rejectJob) => {
              pending.set(job.id, { resolve: resolveJob, reject: rejectJob });
              child.stdin?.write(`${JSON.stringify(job)}\n`);
            });
          },
          async stop() {
            if (child.exitCode !== null || child.signalCode !== null) return;
            child.stdin?.end();
            const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
            await exited;
            clearTimeout(timer);
          },
        });
        return;
      }
      const result = JSON.parse(line) as HammerResult;
      pending.get(result.id)?.resolve(result);
      pending.delete(result.id);
    });
  });
}

/**
 * A throwaway Redis server and `count` workers on it for the whole file, started once; `ready`
 * receives them. The workers stop before the server does.
 */
export function useHammerWorkers(
  count: number,
  ready: (started: { server: RedisServer; client: Redis; workers: Worker[] }) => void,
): void {
  let workers: Worker[] = [];
  useRedisServer(async (started) => {
    workers = await Promise.all(Array.from({ length: count }, () => startWorker(started.server.port)));
    ready({ ...started, workers });
  });
  // Registered after useRedisServer's: vitest runs it first, before the server stops.
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
  });
}
