/**
 * Decisions per second and latency on Redis, with 1 and with 64 checks in flight, for two
 * workloads: (a) many distinct keys, all under their limits; (b) one hot key far over its limit
 * (a flood). Every contender gets a fresh plain client and an empty Redis.
 */
import { REDIS_CONTENDERS } from '../peers/index.js';
import type { Contender, Policy } from '../peers/types.js';
import { type BenchContext, userKeys } from '../support/context.js';
import { type LoadResult, runLoad } from '../support/load.js';
import { connect, redisCpuSeconds } from '../support/redis.js';

export type Workload = 'many' | 'flood';

export const WORKLOADS: Record<Workload, { title: string; policy: Policy }> = {
  many: { title: 'many distinct keys, under their limits', policy: { limit: 100_000, windowMs: 60_000 } },
  flood: { title: 'one hot key far over its limit (flood)', policy: { limit: 100, windowMs: 60_000 } },
};

export interface DecisionResult extends LoadResult {
  /** CPU time of this Node process (load generator included, the same for everyone) per decision, µs. */
  clientCpuUs: number;
  /** CPU time of the Redis server per decision, µs. */
  redisCpuUs: number;
}

export interface DecisionRun {
  contender: Pick<Contender, 'name' | 'short' | 'role'>;
  workload: Workload;
  inFlight: number;
  result: DecisionResult;
}

async function measure(
  context: BenchContext,
  contender: Contender,
  workload: Workload,
  inFlight: number,
  keys: readonly string[],
  seconds = context.settings.seconds,
): Promise<DecisionResult> {
  const { server, admin, settings } = context;
  await admin.flushall();
  const client = await connect(server, contender.clientOptions);
  try {
    const check = await contender.create(client, WORKLOADS[workload].policy);
    const operation =
      workload === 'flood' ? () => check('hot') : (i: number) => check(keys[i % keys.length] as string);
    let cpuBefore = process.cpuUsage();
    let redisBefore = 0;
    const result = await runLoad(operation, {
      inFlight,
      seconds,
      warmupSeconds: settings.warmupSeconds,
      betweenPhases: async () => {
        redisBefore = await redisCpuSeconds(admin);
        cpuBefore = process.cpuUsage();
      },
    });
    const cpu = process.cpuUsage(cpuBefore);
    const redisCpu = (await redisCpuSeconds(admin)) - redisBefore;
    return {
      ...result,
      clientCpuUs: (cpu.user + cpu.system) / result.ops,
      redisCpuUs: (redisCpu * 1e6) / result.ops,
    };
  } finally {
    client.disconnect();
  }
}

export async function runDecisions(context: BenchContext): Promise<DecisionRun[]> {
  const keys = userKeys(context.settings.manyKeys);
  const runs: DecisionRun[] = [];
  // Compile the shared code (ioredis, Floodgate's limiter) before any row is measured, so the
  // first row does not pay for it.
  const first = REDIS_CONTENDERS[0] as Contender;
  await measure(context, first, 'many', 64, keys, context.settings.warmupSeconds * 3);
  for (const inFlight of context.settings.inFlight) {
    for (const contender of REDIS_CONTENDERS) {
      const workloads: Workload[] = contender.keyIndependent ? ['many'] : ['many', 'flood'];
      for (const workload of workloads) {
        const result = await measure(context, contender, workload, inFlight, keys);
        context.log(
          `decisions ${workload.padEnd(5)} ${String(inFlight).padStart(2)} in flight  ${contender.name.padEnd(52)} ${Math.round(result.perSecond).toLocaleString('en-US').padStart(10)}/s  p99 ${result.p99Us.toFixed(0)} µs  cpu ${result.clientCpuUs.toFixed(1)}+${result.redisCpuUs.toFixed(1)} µs  allowed ${((100 * result.allowed) / Math.max(1, result.ops)).toFixed(1)}%`,
        );
        const { name, short, role } = contender;
        runs.push({ contender: { name, short, role }, workload, inFlight, result });
        // Key-independent work: the same numbers stand for the flood workload.
        if (contender.keyIndependent)
          runs.push({ contender: { name, short, role }, workload: 'flood', inFlight, result });
      }
    }
  }
  return runs;
}
