/**
 * What `floodgate compare --schedule` prints: a table of the three modes, and a chart of each
 * over time (jobs waiting for a turn, grants per second, upstream 429s per second), drawn with
 * the compare chart's pieces.
 */
import { formatDuration } from '../../internal.js';
import { renderTable } from '../table.js';
import { COLORS, line, text } from './chart.js';
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

interface Panel {
  title: string;
  value: (sample: LabSample, bucketSeconds: number) => number;
  color: string;
}

const PANELS: readonly Panel[] = [
  { title: 'jobs waiting for a turn', value: (sample) => sample.waiting, color: COLORS.line },
  { title: 'grants per second', value: (sample, s) => sample.grants / s, color: COLORS.admitted },
  { title: 'upstream 429s per second', value: (sample, s) => sample.limited / s, color: COLORS.rejected },
];

const LEFT = 250;
const TOP = 70;
const PANEL_W = 300;
const PANEL_H = 110;
const GAP_X = 40;
const GAP_Y = 36;

export function scheduleSvg(settings: ScheduleLabSettings, runs: readonly LabRun[]): string {
  const width = LEFT + PANELS.length * (PANEL_W + GAP_X);
  const height = TOP + runs.length * (PANEL_H + GAP_Y) + 20;
  const bucketSeconds = (settings.windows * settings.windowMs) / settings.buckets / 1000;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12" fill="${COLORS.text}">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    text(20, 22, describeRun(settings), { size: 13, weight: 'bold' }),
  ];
  PANELS.forEach((panel, column) => {
    const x0 = LEFT + column * (PANEL_W + GAP_X);
    const max = Math.max(
      1,
      ...runs.flatMap((run) => run.samples.map((sample) => panel.value(sample, bucketSeconds))),
    );
    parts.push(text(x0, TOP - 22, `${panel.title} (top: ${Math.round(max)})`, { size: 12, weight: 'bold' }));
    runs.forEach((run, row) => {
      const y0 = TOP + row * (PANEL_H + GAP_Y);
      if (column === 0)
        parts.push(text(LEFT - 14, y0 + PANEL_H / 2, MODE_TITLES[run.mode], { anchor: 'end', size: 11 }));
      parts.push(`<rect x="${x0}" y="${y0}" width="${PANEL_W}" height="${PANEL_H}" fill="${COLORS.frame}"/>`);
      const xOf = (atMs: number) => x0 + (atMs / (settings.windows * settings.windowMs)) * PANEL_W;
      for (
        let edge = settings.windowMs;
        edge < settings.windows * settings.windowMs;
        edge += settings.windowMs
      ) {
        parts.push(line(xOf(edge), y0, xOf(edge), y0 + PANEL_H, COLORS.edge, '2 3'));
      }
      const points = run.samples
        .map(
          (sample) =>
            `${xOf(sample.atMs).toFixed(1)},${(y0 + PANEL_H - (panel.value(sample, bucketSeconds) / max) * PANEL_H).toFixed(1)}`,
        )
        .join(' ');
      parts.push(
        `<polyline points="${x0},${y0 + PANEL_H} ${points}" fill="none" stroke="${panel.color}" stroke-width="2"/>`,
      );
    });
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
