/** BENCHMARKS.md section 8: the scheduler scenario's two tables (bench/scenarios/scheduler.ts). */
import type { SchedulerRow } from './scenarios/scheduler.js';
import { bold, count, ratio, table } from './support/markdown.js';

function name(row: SchedulerRow): string {
  return row.contender.role === 'floodgate' ? bold(row.contender.name) : row.contender.name;
}

export function schedulerSection(rows: readonly SchedulerRow[]): string {
  const saturated = rows.filter((row) => row.workload === 'saturated');
  const overhead = rows.filter((row) => row.workload === 'overhead');
  const first = saturated.find((row) => row.skipped === undefined) ?? saturated[0];
  const bare = overhead.find((row) => row.contender.role === 'ceiling');
  const saturatedBody = saturated.map((row) =>
    row.skipped !== undefined
      ? [name(row), String(row.processes), row.skipped, '', '', '']
      : [
          name(row),
          String(row.processes),
          count(Math.round(row.jobsPerSecond)),
          `${(((row.jobsPerSecond * (row.windowMs / 1000)) / row.limit) * 100).toFixed(1)}%`,
          String(row.upstream429),
          row.redisCallsPerJob === null ? '' : row.redisCallsPerJob.toFixed(2),
        ],
  );
  const overheadBody = overhead.map((row) =>
    row.skipped !== undefined
      ? [name(row), row.skipped, '']
      : [name(row), count(Math.round(row.jobsPerSecond)), ratio(bare?.jobsPerSecond, row.jobsPerSecond)],
  );
  return `## 8. Scheduling calls to a rate-limited API

**Saturated.** ${first ? `${first.limit} jobs per ${first.windowMs} ms` : 'A limit'} for every scheduler, and an upstream
with the same hidden limit counted in its own fixed windows; 32 workers keep jobs queued. A
scheduler that starts more than the limit in any window gets 429s. Contenders on Redis run as 4
simulated processes sharing it; _Redis calls / job_ counts the commands their clients sent.

${table(['scheduler', 'processes', 'jobs/s', 'of the limit', 'upstream 429s', 'Redis calls / job'], saturatedBody)}

**Overhead.** A limit no run reaches, no-op jobs, 32 at a time, one process: what scheduling
costs beside a bare \`limiter.check\` of the same rule (÷: how many times the bare check's rate).

${table(['scheduler', 'jobs/s', 'bare check ÷ row'], overheadBody)}
`;
}
