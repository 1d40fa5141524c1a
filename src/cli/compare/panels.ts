/**
 * A grid of small line charts: one row per run, one column per measure, each measure on one
 * scale across the rows, time along x. The labs (`--schedule`, `--adaptive`) draw with it.
 */
import { COLORS, line, text } from './chart.js';

export interface PanelColumn<Sample> {
  readonly title: string;
  readonly value: (sample: Sample) => number;
  readonly color: string;
}

export interface PanelRow<Sample> {
  readonly title: string;
  readonly samples: readonly Sample[];
}

export interface PanelChart<Sample> {
  readonly heading: string;
  readonly columns: readonly PanelColumn<Sample>[];
  readonly rows: readonly PanelRow<Sample>[];
  readonly durationMs: number;
  readonly atMs: (sample: Sample) => number;
  /** Times to mark with a dashed line in every panel (window edges, capacity changes). */
  readonly marks: readonly number[];
}

const LEFT = 250;
const TOP = 70;
const PANEL_W = 300;
const PANEL_H = 110;
const GAP_X = 40;
const GAP_Y = 36;

export function panelSvg<Sample>(chart: PanelChart<Sample>): string {
  const width = LEFT + chart.columns.length * (PANEL_W + GAP_X);
  const height = TOP + chart.rows.length * (PANEL_H + GAP_Y) + 20;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12" fill="${COLORS.text}">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    text(20, 22, chart.heading, { size: 13, weight: 'bold' }),
  ];
  chart.columns.forEach((column, index) => {
    const x0 = LEFT + index * (PANEL_W + GAP_X);
    const max = Math.max(1, ...chart.rows.flatMap((row) => row.samples.map(column.value)));
    parts.push(text(x0, TOP - 22, `${column.title} (top: ${Math.round(max)})`, { size: 12, weight: 'bold' }));
    chart.rows.forEach((row, rowIndex) => {
      const y0 = TOP + rowIndex * (PANEL_H + GAP_Y);
      if (index === 0) parts.push(text(LEFT - 14, y0 + PANEL_H / 2, row.title, { anchor: 'end', size: 11 }));
      parts.push(`<rect x="${x0}" y="${y0}" width="${PANEL_W}" height="${PANEL_H}" fill="${COLORS.frame}"/>`);
      const xOf = (atMs: number) => x0 + (atMs / chart.durationMs) * PANEL_W;
      for (const mark of chart.marks)
        parts.push(line(xOf(mark), y0, xOf(mark), y0 + PANEL_H, COLORS.edge, '2 3'));
      const points = row.samples
        .map(
          (sample) =>
            `${xOf(chart.atMs(sample)).toFixed(1)},${(y0 + PANEL_H - (column.value(sample) / max) * PANEL_H).toFixed(1)}`,
        )
        .join(' ');
      parts.push(
        `<polyline points="${x0},${y0 + PANEL_H} ${points}" fill="none" stroke="${column.color}" stroke-width="2"/>`,
      );
    });
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
