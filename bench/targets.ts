/**
 * Issue 7's targets, checked against this run's numbers (never asserted anywhere: a quick run on
 * a busy machine is only indicative). Each line says what was measured and whether it meets the target.
 */
import type { BenchResults } from './report.js';
import { SKEW_LIMIT } from './scenarios/clock-skew.js';
import { table } from './support/markdown.js';

type Status = 'met' | 'not met' | 'not measured';
interface Line {
  target: string;
  measured: string;
  status: Status;
}

const O1 = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra'];
const x = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : '—');
const status = (ok: boolean): Status => (ok ? 'met' : 'not met');
const algorithmOf = (name: string) => name.replace(/^floodgate /, '');

function decisionLines(results: BenchResults): Line[] {
  const runs = results.decisions?.filter((run) => run.inFlight === 64);
  if (runs === undefined || runs.length === 0) return [];
  const lines: Line[] = [];
  const many = runs.filter((run) => run.workload === 'many');
  const evalsha = many.find((run) => run.contender.short === 'EVALSHA')?.result.perSecond ?? Number.NaN;
  const bestPeer = Math.max(
    ...many.filter((run) => run.contender.role === 'peer').map((run) => run.result.perSecond),
  );
  const o1 = many.filter(
    (run) => run.contender.role === 'floodgate' && O1.includes(algorithmOf(run.contender.name)),
  );
  const toCeiling = o1.map((run) => run.result.perSecond / evalsha);
  const toPeer = o1.map((run) => run.result.perSecond / bestPeer);
  lines.push({
    target:
      'Many keys, 64 in flight, plain client: ≥ 0.95× EVALSHA ceiling and ≥ 1× best peer (O(1) algorithms)',
    measured: `÷ EVALSHA / ÷ best peer: ${o1
      .map(
        (run, i) =>
          `${algorithmOf(run.contender.name)} ${x(toCeiling[i] as number)} / ${x(toPeer[i] as number)}`,
      )
      .join('; ')}`,
    status: status(Math.min(...toCeiling) >= 0.95 && Math.min(...toPeer) >= 1),
  });
  lines.push({
    target: 'Many keys, 64 in flight, with Floodgate batching: ≥ 1.5× best peer',
    measured: `best Floodgate row ${x(Math.max(...toPeer))} of best peer (no batching contender yet)`,
    status: status(Math.max(...toPeer) >= 1.5),
  });
  const flood = runs.filter((run) => run.workload === 'flood');
  const fg = flood.filter((run) => run.contender.role === 'floodgate');
  const worstFg = Math.min(...fg.map((run) => run.result.perSecond));
  const callingPeers = flood.filter(
    (run) => run.contender.role === 'peer' && run.contender.short !== 'rlf+block',
  );
  const blockPeer = flood.find((run) => run.contender.short === 'rlf+block')?.result.perSecond ?? Number.NaN;
  const fastestCalling = Math.max(...callingPeers.map((run) => run.result.perSecond));
  const floodRequests = results.redisCost
    ?.filter((row) => row.contender.role === 'floodgate')
    .map((row) => row.flood.requests);
  const worstRequests = floodRequests === undefined ? Number.NaN : Math.max(...floodRequests);
  lines.push({
    target:
      'Flood, 64 in flight: ≥ 10× every peer that calls Redis, ≥ 1× rlf+block, ≤ 0.01 requests/decision',
    measured: `÷ fastest Redis-calling peer: ${fg.map((run) => `${algorithmOf(run.contender.name)} ${x(run.result.perSecond / fastestCalling)}`).join(', ')}; slowest ÷ rlf+block ${x(worstFg / blockPeer)}; ${Number.isFinite(worstRequests) ? worstRequests.toFixed(3) : '—'} requests/decision`,
    status: status(worstFg >= 10 * fastestCalling && worstFg >= blockPeer && worstRequests <= 0.01),
  });
  return lines;
}

function memoryPerKeyLine(results: BenchResults): Line[] {
  const rows = results.redisCost;
  if (rows === undefined) return [];
  const counter = rows.find((row) => row.contender.short === 'counter')?.bytesPerKey ?? Number.NaN;
  const o1 = rows.filter(
    (row) => row.contender.role === 'floodgate' && O1.includes(algorithmOf(row.contender.name)),
  );
  const log = rows.find((row) => row.contender.name === 'floodgate sliding-log');
  return [
    {
      target: 'Memory per key: fixed-window, sliding-window, token-bucket, gcra ≤ 1.5× a string counter',
      measured: `${o1.map((row) => `${algorithmOf(row.contender.name)} ${x(row.bytesPerKey / counter)}`).join('; ')}${log ? `; sliding-log ${x(log.bytesPerKey / counter)} (O(limit))` : ''}`,
      status: status(o1.every((row) => row.bytesPerKey <= 1.5 * counter)),
    },
  ];
}

/**
 * The median over rounds of a ÷ b, where a's and b's round i ran back to back: a burst of load
 * from elsewhere on the machine then falls on both sides of a ratio rather than on one median.
 */
function pairedRatio(
  a: readonly number[] | undefined,
  b: readonly number[] | undefined,
): { median: number; count: number } | undefined {
  if (a === undefined || b === undefined || a.length !== b.length || a.length === 0) return undefined;
  const ratios = a.map((value, i) => value / (b[i] as number)).sort((p, q) => p - q);
  const middle = (ratios.length - 1) / 2;
  const median = ((ratios[Math.floor(middle)] as number) + (ratios[Math.ceil(middle)] as number)) / 2;
  return { median, count: ratios.length };
}

function httpLines(results: BenchResults): Line[] {
  if (results.http === undefined) return [];
  return (['fastify', 'express'] as const).map((framework) => {
    const rows = results.http?.filter((run) => run.framework === framework) ?? [];
    const fg = rows.find((run) => run.variant.endsWith('floodgate'));
    const peer = rows.find((run) => run.variant !== framework && !run.variant.endsWith('floodgate'));
    const target = `HTTP: ${framework} + Floodgate ≥ 1.2× ${peer?.variant ?? 'peer'} requests/s`;
    if (fg?.result === undefined || peer?.result === undefined)
      return { target, measured: fg?.skipped ?? 'not run', status: 'not measured' as const };
    const ofMedians = fg.result.requestsPerSecond / peer.result.requestsPerSecond;
    const paired = pairedRatio(fg.rounds, peer.rounds);
    // The bare server ÷ the peer: what a limiter that cost nothing at all would reach.
    const bare = rows.find((run) => run.variant === framework);
    const ceiling = bare?.result === undefined ? undefined : pairedRatio(bare.rounds, peer.rounds);
    const reach = ceiling === undefined ? '' : `; a limiter costing nothing would reach ${x(ceiling.median)}`;
    if (paired === undefined) return { target, measured: x(ofMedians), status: status(ofMedians >= 1.2) };
    return {
      target,
      measured: `${x(paired.median)} (median of ${paired.count} rounds, each pair back to back; ratio of the medians ${x(ofMedians)}${reach})`,
      status: status(paired.median >= 1.2),
    };
  });
}

function memoryStoreLine(results: BenchResults): Line[] {
  const runs = results.memory;
  if (runs === undefined) return [];
  const parts: string[] = [];
  let worst = Number.POSITIVE_INFINITY;
  for (const workload of ['many', 'many-large', 'flood'] as const) {
    const rows = runs.filter((run) => run.workload === workload);
    if (rows.length === 0) continue;
    const rlf = rows.find((run) => run.contender.short === 'rlf')?.result.perSecond ?? Number.NaN;
    const fg = rows.filter((run) => run.contender.role === 'floodgate');
    worst = Math.min(worst, ...fg.map((run) => run.result.perSecond / rlf));
    parts.push(
      `${workload}: ${fg.map((run) => `${algorithmOf(run.contender.name)} ${x(run.result.perSecond / rlf)}`).join(', ')}`,
    );
  }
  return [
    {
      target: "Memory store ≥ 2× rate-limiter-flexible's RateLimiterMemory",
      measured: parts.join('; '),
      status: status(worst >= 2),
    },
  ];
}

function clockSkewLine(results: BenchResults): Line[] {
  const rows = results.clockSkew;
  if (rows === undefined) return [];
  const article = rows.filter((row) => row.limiter.startsWith('article') && row.clocks.startsWith('pods -2'));
  const real = rows.find((row) => row.clocks.startsWith('Redis TIME'));
  return [
    {
      target: `Clock skew ±2 s: Floodgate on Redis TIME admits ≤ ${SKEW_LIMIT} per window`,
      measured: `Floodgate ${real?.maxAdmitted ?? '—'}${real?.maxPossible !== undefined && real.maxPossible !== real.maxAdmitted ? ` (≤ ${real.maxPossible} within round-trip uncertainty)` : ''}; the article's script ${article.map((row) => `${row.maxAdmitted} (${row.windowMs / 1000} s window)`).join(', ')}`,
      status: status(real !== undefined && real.maxAdmitted <= SKEW_LIMIT),
    },
  ];
}

export function targetsSection(results: BenchResults): string {
  const lines = [
    ...decisionLines(results),
    ...memoryPerKeyLine(results),
    ...httpLines(results),
    ...memoryStoreLine(results),
    ...clockSkewLine(results),
  ];
  if (lines.length === 0) return '';
  return `## Targets (issue 7), as measured in this run

${table(
  ['target', 'measured', 'status'],
  lines.map((line) => [line.target, line.measured, line.status === 'met' ? 'met' : `**${line.status}**`]),
)}
`;
}
