/**
 * Worker OS processes for the cross-process tests: `node --import tsx <worker> <args...>`, each
 * answering one JSON line per command line, after a first line saying it is ready (`ready` or
 * `"ready"`). Started before a file's tests, their stdin ended after them (so they exit).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface WorkerProcess {
  readonly child: ChildProcess;
  readonly lines: AsyncIterator<string>;
}

async function startWorker(worker: string, args: readonly string[]): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', worker, ...args], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const first = (await lines.next()).value;
  if (first !== 'ready' && first !== '"ready"') throw new Error(`${worker}: expected ready, got ${first}`);
  return { child, lines };
}

/**
 * `count` workers for the file's tests, filled in before they run; `args` is read then (e.g. a
 * Redis port known only once its server started).
 */
export function useWorkerProcesses(
  worker: string,
  count: number,
  args: () => readonly string[],
): WorkerProcess[] {
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    for (let i = 0; i < count; i++) workers.push(await startWorker(worker, args()));
  });
  afterAll(() => {
    for (const { child } of workers) child.stdin?.end();
  });
  return workers;
}

/** Sends one command to a worker and reads its JSON answer. */
export async function ask<T>(worker: WorkerProcess, command: object): Promise<T> {
  worker.child.stdin?.write(`${JSON.stringify(command)}\n`);
  return JSON.parse((await worker.lines.next()).value as string) as T;
}
