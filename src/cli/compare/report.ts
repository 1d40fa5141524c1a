/**
 * What `floodgate compare` prints: one table per scenario, then the article's comparison table
 * with measured values instead of adjectives; or the same numbers as JSON for machines.
 */
import { formatDuration } from '../../internal.js';
import { type Align, renderTable } from '../table.js';
import type { RedisMeasurement } from './on-redis.js';
import { type AlgorithmResult, burstWindowOf, type CompareSettings, type ScenarioResult } from './run.js';

export interface CompareReport {
  limit: number;
  windowMs: number;
  burst: number;
  burstWindowMs: number;
  seed: number;
  /** The Redis measured on (without credentials), or null. */
  redis: string | null;
  scenarios: ScenarioResult[];
  summary: SummaryRow[];
}

export interface SummaryRow {
  algorithm: string;
  requests: number;
  /** Worst max-in-window / limit over the scenarios. */
  maxInWindowRatio: number;
  falseAllows: number;
  falseDenies: number;
  /** Admissions that put a client over the limit. */
  overLimit: number;
  /** Most admitted in any tenth of a window, over the scenarios. */
  maxInBurstWindow: number;
  /** Largest measured memory per client key over the scenarios, or null without --redis. */
  memoryPerKeyBytes: number | null;
  /** Script calls per decision: at most one FCALL or EVALSHA (checks issued together share one). */
  redisCallsPerDecision: number;
  /** Measured commands inside the script per decision (with --redis), or null. */
  commandsPerDecision: number | null;
}

export function buildReport(
  settings: CompareSettings,
  scenarios: ScenarioResult[],
  redisLabel: string | null,
): CompareReport {
  const summary: SummaryRow[] = settings.algorithms.map((algorithm) => {
    const rows = scenarios.flatMap((scenario) =>
      scenario.results.filter((row) => row.algorithm === algorithm),
    );
    const measured = rows
      .map((row) => row.redis)
      .filter((redis): redis is RedisMeasurement => redis !== null);
    const memories = measured.map((redis) => redis.memoryPerKeyBytes).filter((bytes) => bytes !== null);
    const requests = sum(rows.map((row) => row.requests));
    return {
      algorithm,
      requests,
      maxInWindowRatio: Math.max(0, ...rows.map((row) => row.maxInWindowRatio)),
      falseAllows: sum(rows.map((row) => row.falseAllows)),
      falseDenies: sum(rows.map((row) => row.falseDenies)),
      overLimit: sum(rows.map((row) => row.overLimit)),
      maxInBurstWindow: Math.max(0, ...rows.map((row) => row.maxInBurstWindow)),
      memoryPerKeyBytes: memories.length > 0 ? Math.max(...memories) : null,
      redisCallsPerDecision: measured.length > 0 ? weighted(rows, (redis) => redis.callsPerDecision) : 1,
      commandsPerDecision: measured.length > 0 ? weighted(rows, (redis) => redis.commandsPerDecision) : null,
    };
  });
  return {
    limit: settings.limit,
    windowMs: settings.windowMs,
    burst: settings.burst ?? settings.limit,
    burstWindowMs: burstWindowOf(settings.windowMs),
    seed: settings.seed,
    redis: redisLabel,
    scenarios,
    summary,
  };
}

/** The report as JSON: everything but the chart series. */
export function reportJson(report: CompareReport): string {
  return JSON.stringify(report, (key, value) => (key === 'series' ? undefined : value), 2);
}

export function reportText(report: CompareReport): string {
  const W = formatDuration(report.windowMs);
  const B = formatDuration(report.burstWindowMs);
  const out: string[] = [
    `floodgate compare: limit ${report.limit} per ${W}, every algorithm on the same simulated traffic`,
    `(token-bucket and gcra: burst ${report.burst}; false allows/denies: decisions unlike the exact sliding log run on the same traffic;\n over limit: admissions that put their client over the limit in some ${W})`,
  ];
  const align: Align[] = [
    'left',
    'right',
    'right',
    'right',
    'right',
    'right',
    'right',
    'right',
    'left',
    'left',
  ];
  for (const scenario of report.scenarios) {
    out.push('', `${scenario.name}: ${scenario.description}`);
    const rows = scenario.results.map((row) => [
      row.algorithm,
      String(row.admitted),
      String(row.rejected),
      `${row.maxInWindow} (${row.maxInWindowRatio.toFixed(2)}×)`,
      `${row.overLimit} (${percent(row.overLimit, row.requests)})`,
      `${row.falseAllows} (${percent(row.falseAllows, row.requests)})`,
      `${row.falseDenies} (${percent(row.falseDenies, row.requests)})`,
      String(row.maxInBurstWindow),
      memoryText(row.redis?.memoryPerKeyBytes, row.redis !== null),
      callsText(row),
    ]);
    out.push(
      renderTable(
        [
          'algorithm',
          'admitted',
          'rejected',
          `max in any ${W}`,
          'over limit',
          'false allows',
          'false denies',
          `max in any ${B}`,
          'Redis memory/key',
          'Redis calls/decision',
        ],
        rows,
        align,
      ),
    );
    const drift = scenario.results.filter((row) => (row.redis?.mismatches ?? 0) > 0);
    for (const row of drift) {
      out.push(
        `warning: ${row.algorithm} decided ${row.redis?.mismatches} requests differently on Redis than in memory`,
      );
    }
  }
  out.push(
    '',
    `The article's table, measured (worst case over ${report.scenarios.map((s) => s.name).join(', ')}):`,
  );
  out.push(
    renderTable(
      [
        'algorithm',
        `precision (most admitted in one ${W}; decisions unlike the exact sliding log)`,
        `burst handling (most in one ${B})`,
        'Redis memory per key',
        'Redis commands per decision',
      ],
      report.summary.map((row) => [
        row.algorithm,
        `${row.maxInWindowRatio.toFixed(2)}× the limit; ${percent(row.falseAllows, row.requests)} false allows, ${percent(row.falseDenies, row.requests)} false denies`,
        `${row.maxInBurstWindow} (${(row.maxInBurstWindow / report.limit).toFixed(2)}× the limit)`,
        memoryText(row.memoryPerKeyBytes, report.redis !== null),
        row.commandsPerDecision === null
          ? '≤ 1 (one script call, shared by checks issued together)'
          : `${row.redisCallsPerDecision.toFixed(2)} script calls (${row.commandsPerDecision.toFixed(1)} commands inside)`,
      ]),
      ['left', 'left', 'left', 'left', 'left'],
    ),
  );
  if (report.redis !== null) out.push('', `Redis figures measured on ${report.redis}.`);
  return `${out.join('\n')}\n`;
}

function callsText(row: AlgorithmResult): string {
  if (row.redis === null) return '≤ 1 script call';
  return `${row.redis.callsPerDecision.toFixed(2)} script calls (${row.redis.commandsPerDecision.toFixed(1)} commands inside)`;
}

function memoryText(bytes: number | null | undefined, measured: boolean): string {
  if (!measured) return 'n/a (use --redis)';
  if (bytes === null || bytes === undefined) return 'n/a (keys expired)';
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`;
}

function percent(part: number, whole: number): string {
  return `${whole === 0 ? '0.00' : ((part / whole) * 100).toFixed(2)}%`;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** A per-decision figure averaged over scenarios, weighted by their requests. */
function weighted(rows: AlgorithmResult[], pick: (redis: RedisMeasurement) => number): number {
  let total = 0;
  let requests = 0;
  for (const row of rows) {
    if (row.redis === null) continue;
    total += pick(row.redis) * row.requests;
    requests += row.requests;
  }
  return requests === 0 ? 0 : total / requests;
}
