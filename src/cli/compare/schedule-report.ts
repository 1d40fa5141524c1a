/**
 * What `floodgate compare --schedule` prints: a table of the three modes, and a chart of each
 * over time (jobs waiting for a turn, grants per second, upstream 429s per second), drawn with
 * the compare chart's pieces.
 */
import { formatDuration } from '../../internal.js';
import { renderTable } from '../table.js';
import { COLORS } from './chart.js';
import { panelSvg } from './panels.js';
import type { LabMode, LabRun, LabSample, ScheduleLabSettings } from './schedule-lab.js';

const MODE_TITLES: Record<LabMode, string> = {
  direct: 'no scheduler, Retry-After waited out',
  rules: 'scheduler, rules 2× too loose, headers not read',
  headers: 'scheduler, rules 2× too loose, headers read',
};

function describeRun(settings: ScheduleLabSettings): string {
  const W = formatDuration(settings.windowMs);
  return `floodgate compare --schedule: ${settings.workers} workers in ${settings.processes} processes, an upstream allowing ${settings.requests} requests and ${settings.tokens} tokens per ${W} (${settings.dialect} headers, ${settings.latencyMs} ms per answer), ${settings.windows} windows per mode`;
}

export function scheduleText(settings: ScheduleLabSettings, runs: readonly LabRun[]): string {
  const rows = runs.map((run) => [
    MODE_TITLES[run.mode],
    String(run.served),
    String(run.limited),
    String(run.limitedAfterFirstAnswer),
    `${(run.budgetUsed * 100).toFixed(1)}%`,
    String(run.maxWaiting),
  ]);
  const table = renderTable(
    ['mode', 'served', 'upstream 429s', '429s after the first answer', 'budget used', 'most waiting'],
    rows,
    ['left', 'right', 'right', 'right', 'right', 'right'],
  );
  return `${describeRun(settings)}\n\n${table}\n`;
}

export function scheduleSvg(settings: ScheduleLabSettings, runs: readonly LabRun[]): string {
  const durationMs = settings.windows * settings.windowMs;
  const bucketSeconds = durationMs / settings.buckets / 1000;
  const marks: number[] = [];
  for (let edge = settings.windowMs; edge < durationMs; edge += settings.windowMs) marks.push(edge);
  return panelSvg<LabSample>({
    heading: describeRun(settings),
    columns: [
      { title: 'jobs waiting for a turn', value: (sample) => sample.waiting, color: COLORS.line },
      {
        title: 'grants per second',
        value: (sample) => sample.grants / bucketSeconds,
        color: COLORS.admitted,
      },
      {
        title: 'upstream 429s per second',
        value: (sample) => sample.limited / bucketSeconds,
        color: COLORS.rejected,
      },
    ],
    rows: runs.map((run) => ({ title: MODE_TITLES[run.mode], samples: run.samples })),
    durationMs,
    atMs: (sample) => sample.atMs,
    marks,
  });
}
