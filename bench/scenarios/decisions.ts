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
  warmupSeconds = context.settings.warmupSeconds,
): Promise<DecisionResult> {
  const { server, admin } = context;
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
      warmupSeconds,
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

/**
 * Every row of one table (one workload at one concurrency) is measured in `decisionRounds`
 * rounds of `seconds / decisionRounds` each, the contenders in forward then backward order, and keeps its best round: on a shared
 * machine a slow phase (a plain CPU loop here varies ±25% from second to second) then has to hit
 * a contender in every round, at different times, to show in its row, and rows compared in a
 * ratio ran minutes apart no more.
 */
export async function runDecisions(context: BenchContext): Promise<DecisionRun[]> {
  const { settings } = context;
  // The run's measured seconds and warmup shared out over the rounds: the scenario takes as long
  // as one round of full-length runs would.
  const seconds = settings.seconds / settings.decisionRounds;
  const warmupSeconds = settings.warmupSeconds / settings.decisionRounds;
  const keys = userKeys(settings.manyKeys);
  const runs: DecisionRun[] = [];
  // Compile the shared code (ioredis, Floodgate's limiter) before any row is measured, so the
  // first row does not pay for it.
  const first = REDIS_CONTENDERS[0] as Contender;
  await measure(context, first, 'many', 64, keys, settings.warmupSeconds * 3);
  for (const inFlight of settings.inFlight) {
    for (const workload of ['many', 'flood'] as const) {
      // Key-independent contenders (the ceilings) are measured once, with the many-keys rows.
      const contenders = REDIS_CONTENDERS.filter((c) => workload === 'many' || !c.keyIndependent);
      const best = new Map<Contender, DecisionResult>();
      for (let round = 0; round < settings.decisionRounds; round++) {
        const order = round % 2 === 0 ? contenders : [...contenders].reverse();
        for (const contender of order) {
          const result = await measure(context, contender, workload, inFlight, keys, seconds, warmupSeconds);
          context.log(
            `decisions ${workload.padEnd(5)} ${String(inFlight).padStart(2)} in flight  ${contender.name.padEnd(52)} ${Math.round(result.perSecond).toLocaleString('en-US').padStart(10)}/s  p99 ${result.p99Us.toFixed(0)} µs  cpu ${result.clientCpuUs.toFixed(1)}+${result.redisCpuUs.toFixed(1)} µs  allowed ${((100 * result.allowed) / Math.max(1, result.ops)).toFixed(1)}%`,
          );
          const kept = best.get(contender);
          if (kept === undefined || result.perSecond > kept.perSecond) best.set(contender, result);
        }
      }
      for (const contender of contenders) {
        const { name, short, role } = contender;
        const result = best.get(contender) as DecisionResult;
        runs.push({ contender: { name, short, role }, workload, inFlight, result });
        // Key-independent work: the same numbers stand for the flood workload.
        if (contender.keyIndependent)
          runs.push({ contender: { name, short, role }, workload: 'flood', inFlight, result });
      }
    }
  }
  return runs;
}
