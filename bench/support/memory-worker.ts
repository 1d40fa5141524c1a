/**
 * One in-process contender's run of the memory-store scenario, alone in a fresh Node process:
 *   node --import tsx bench/support/memory-worker.ts '<json MemoryJob>'
 * Prints the LoadResult as one JSON line. Alone, because V8 specialises the hot code of the
 * first limiter it runs: the fifth Floodgate algorithm run in one process went through call
 * sites the other four had made megamorphic (measured 0.8M vs 1.4M checks/s for token-bucket),
 * a cost no application that picks its algorithm pays. Every contender gets the same isolation.
 */
import { MEMORY_CONTENDERS } from '../peers/index.js';
import { WORKLOADS } from '../scenarios/decisions.js';
import type { MemoryWorkload } from '../scenarios/memory-store.js';
import { userKeys } from './context.js';
import { runLoad } from './load.js';

export interface MemoryJob {
  /** Index into MEMORY_CONTENDERS. */
  contender: number;
  workload: MemoryWorkload;
  keys: number;
  seconds: number;
  warmupSeconds: number;
}

const job = JSON.parse(process.argv[2] ?? '') as MemoryJob;
const contender = MEMORY_CONTENDERS[job.contender];
if (contender === undefined) throw new Error(`memory-worker: no contender #${job.contender}`);
const keys = userKeys(job.keys);
const { check, close } = contender.create(WORKLOADS[job.workload === 'flood' ? 'flood' : 'many'].policy);
const operation =
  job.workload === 'flood' ? () => check('hot') : (i: number) => check(keys[i % keys.length] as string);
try {
  const result = await runLoad(operation, {
    inFlight: 1,
    seconds: job.seconds,
    warmupSeconds: job.warmupSeconds,
    latency: false,
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  close?.();
}
