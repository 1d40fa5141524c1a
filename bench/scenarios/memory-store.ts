/**
 * In-process limiters, no Redis: decisions per second of Floodgate's memoryStore (per algorithm)
 * against the peers' memory limiters, one check at a time (awaited, as a request handler would),
 * on the same two workloads as the Redis runs.
 */
import { MEMORY_CONTENDERS } from '../peers/index.js';
import type { MemoryContender } from '../peers/types.js';
import { type BenchContext, userKeys } from '../support/context.js';
import { type LoadResult, runLoad } from '../support/load.js';
import { WORKLOADS, type Workload } from './decisions.js';

export interface MemoryRun {
  contender: Pick<MemoryContender, 'name' | 'short' | 'role'>;
  workload: Workload;
  result: LoadResult;
}

export async function runMemoryStore(context: BenchContext): Promise<MemoryRun[]> {
  const { settings } = context;
  const keys = userKeys(settings.manyKeys);
  const runs: MemoryRun[] = [];
  for (const workload of ['many', 'flood'] as const) {
    for (const contender of MEMORY_CONTENDERS) {
      const { check, close } = contender.create(WORKLOADS[workload].policy);
      const operation =
        workload === 'flood' ? () => check('hot') : (i: number) => check(keys[i % keys.length] as string);
      try {
        const result = await runLoad(operation, {
          inFlight: 1,
          seconds: settings.seconds,
          warmupSeconds: settings.warmupSeconds,
          latency: false,
        });
        context.log(
          `memory ${workload.padEnd(5)} ${contender.name.padEnd(52)} ${Math.round(result.perSecond).toLocaleString('en-US').padStart(11)}/s  allowed ${((100 * result.allowed) / Math.max(1, result.ops)).toFixed(1)}%`,
        );
        const { name, short, role } = contender;
        runs.push({ contender: { name, short, role }, workload, result });
      } finally {
        close?.();
      }
    }
  }
  return runs;
}
