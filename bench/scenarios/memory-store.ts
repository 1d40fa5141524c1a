/**
 * In-process limiters, no Redis: decisions per second of Floodgate's memoryStore (per algorithm)
 * against the peers' memory limiters, one check at a time (awaited, as a request handler would),
 * on the same two workloads as the Redis runs, plus many keys at a larger count (100,000: more
 * than any fixed-size cache of 16 k keys holds, where Floodgate once fell to 0.4x
 * rate-limiter-flexible; O(1) algorithms only, to keep the run short). Each run has a fresh Node
 * process to itself (see bench/support/memory-worker.ts), so no contender runs on code another
 * one has de-optimised.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MEMORY_CONTENDERS } from '../peers/index.js';
import type { MemoryContender } from '../peers/types.js';
import type { BenchContext } from '../support/context.js';
import type { LoadResult } from '../support/load.js';
import type { MemoryJob } from '../support/memory-worker.js';
import type { Workload } from './decisions.js';

const WORKER = fileURLToPath(new URL('../support/memory-worker.ts', import.meta.url));
const run = promisify(execFile);

/** The memory store's workloads: the Redis runs' two, and many keys at a larger count. */
export type MemoryWorkload = Workload | 'many-large';

export interface MemoryRun {
  contender: Pick<MemoryContender, 'name' | 'short' | 'role'>;
  workload: MemoryWorkload;
  result: LoadResult;
}

/** Floodgate's algorithms in the large workload (with every peer): its cheapest and its recommended one. */
export const LARGE_WORKLOAD_ALGORITHMS: readonly string[] = ['fixed-window', 'gcra'];

async function runAlone(job: MemoryJob): Promise<LoadResult> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(job)], {
    timeout: Math.ceil((job.seconds + job.warmupSeconds + 60) * 1000),
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as LoadResult;
}

export async function runMemoryStore(context: BenchContext): Promise<MemoryRun[]> {
  const { settings } = context;
  const runs: MemoryRun[] = [];
  for (const workload of ['many', 'many-large', 'flood'] as const) {
    for (const [index, contender] of MEMORY_CONTENDERS.entries()) {
      if (
        workload === 'many-large' &&
        contender.role === 'floodgate' &&
        !LARGE_WORKLOAD_ALGORITHMS.some((algorithm) => contender.name === `floodgate ${algorithm}`)
      )
        continue;
      const result = await runAlone({
        contender: index,
        workload,
        keys: workload === 'many-large' ? settings.largeKeys : settings.manyKeys,
        seconds: settings.seconds,
        warmupSeconds: settings.warmupSeconds,
      });
      context.log(
        `memory ${workload.padEnd(10)} ${contender.name.padEnd(52)} ${Math.round(result.perSecond).toLocaleString('en-US').padStart(11)}/s  allowed ${((100 * result.allowed) / Math.max(1, result.ops)).toFixed(1)}%`,
      );
      const { name, short, role } = contender;
      runs.push({ contender: { name, short, role }, workload, result });
    }
  }
  return runs;
}
