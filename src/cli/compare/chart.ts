/**
 * `floodgate compare --chart`: an SVG (optionally wrapped in an HTML page) drawn by hand, no
 * dependency. One panel per algorithm and scenario: stacked bars of admitted and rejected
 * requests over time, a line for what was admitted in the trailing window, the limit as a
 * dashed line and the fixed windows' edges, so the fixed window's boundary burst is visible.
 */
import { formatDuration } from '../../internal.js';
import type { CompareReport } from './report.js';

export const COLORS = {
  admitted: '#3b8f4a',
  rejected: '#e0796b',
  line: '#1f4e9c',
  limit: '#1f4e9c',
  edge: '#9a9a9a',
  frame: '#f4f4f4',
  text: '#222222',
  muted: '#666666',
};

const LEFT = 120;
const TOP = 112;
const GAP_X = 34;
const GAP_Y = 36;
const PANEL_H = 120;
const BOTTOM = 30;
const RIGHT = 50;

export function renderSvg(report: CompareReport): string {
  const columns = report.scenarios;
  const algorithms = report.summary.map((row) => row.algorithm);
  const panelW = columns.length === 1 ? 820 : columns.length === 2 ? 520 : 330;
  const width = LEFT + columns.length * panelW + (columns.length - 1) * GAP_X + RIGHT;
  const height = TOP + algorithms.length * (PANEL_H + GAP_Y) - GAP_Y + BOTTOM + 24;
  const W = formatDuration(report.windowMs);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12" fill="${COLORS.text}">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    text(LEFT, 22, `floodgate compare: limit ${report.limit} per ${W}, requests over time per algorithm`, {
      size: 16,
      weight: 'bold',
    }),
    legend(LEFT, 42, W),
  ];

  columns.forEach((scenario, column) => {
    const x0 = LEFT + column * (panelW + GAP_X);
    const rows = scenario.results;
    const barMax = Math.max(
      1,
      ...rows.flatMap((row) => row.series?.admitted.map((a, i) => a + (row.series?.rejected[i] ?? 0)) ?? []),
    );
    const bucketMs = rows[0]?.series?.bucketMs ?? scenario.durationMs;
    parts.push(text(x0, TOP - 40, scenario.name, { size: 14, weight: 'bold' }));
    const shown = scenario.clients > 1 ? `client ${scenario.focusClient} of ${scenario.clients}; ` : '';
    parts.push(
      text(
        x0,
        TOP - 24,
        `${shown}bars: requests per ${formatDuration(Math.round(bucketMs))} (tallest ${barMax})`,
        {
          size: 11,
          color: COLORS.muted,
        },
      ),
    );
    const lineMax =
      Math.max(report.limit * 1.25, ...rows.flatMap((row) => row.series?.inWindow ?? [])) * 1.08;
    rows.forEach((row) => {
      const r = algorithms.indexOf(row.algorithm);
      const y0 = TOP + r * (PANEL_H + GAP_Y);
      if (column === 0)
        parts.push(text(LEFT - 12, y0 + PANEL_H / 2 + 4, row.algorithm, { anchor: 'end', size: 13 }));
      const series = row.series;
      parts.push(`<rect x="${x0}" y="${y0}" width="${panelW}" height="${PANEL_H}" fill="${COLORS.frame}"/>`);
      if (series === undefined) return;
      const buckets = series.admitted.length;
      const barW = panelW / buckets;
      const xOf = (t: number) => x0 + (t / scenario.durationMs) * panelW;
      const bars: string[] = [];
      for (let b = 0; b < buckets; b++) {
        const admitted = series.admitted[b] as number;
        const rejected = series.rejected[b] as number;
        const ha = (admitted / barMax) * PANEL_H;
        const hr = (rejected / barMax) * PANEL_H;
        const bx = (x0 + b * barW).toFixed(1);
        const bw = Math.max(0.5, barW - 0.6).toFixed(1);
        if (admitted > 0)
          bars.push(
            `<rect x="${bx}" y="${(y0 + PANEL_H - ha).toFixed(1)}" width="${bw}" height="${ha.toFixed(1)}" fill="${COLORS.admitted}"/>`,
          );
        if (rejected > 0)
          bars.push(
            `<rect x="${bx}" y="${(y0 + PANEL_H - ha - hr).toFixed(1)}" width="${bw}" height="${hr.toFixed(1)}" fill="${COLORS.rejected}"/>`,
          );
      }
      parts.push(...bars);
      // Fixed windows' edges: where the fixed window's counter restarts.
      for (let edge = report.windowMs; edge < scenario.durationMs; edge += report.windowMs) {
        parts.push(line(xOf(edge), y0, xOf(edge), y0 + PANEL_H, COLORS.edge, '2 3'));
      }
      // Trailing-window admissions against the limit (right-hand scale).
      const yLine = (value: number) => y0 + PANEL_H - (value / lineMax) * PANEL_H;
      parts.push(line(x0, yLine(report.limit), x0 + panelW, yLine(report.limit), COLORS.limit, '6 4', 1.2));
      const points = series.inWindow
        .map((value, b) => `${(x0 + (b + 0.5) * barW).toFixed(1)},${yLine(value).toFixed(1)}`)
        .join(' ');
      parts.push(`<polyline points="${points}" fill="none" stroke="${COLORS.line}" stroke-width="2"/>`);
      parts.push(
        text(x0 + panelW + 4, yLine(report.limit) + 4, `${report.limit}`, { size: 11, color: COLORS.limit }),
      );
      const over = row.maxInWindow > report.limit;
      parts.push(
        text(
          x0,
          y0 - 6,
          `max ${row.maxInWindow} in any ${W} (${row.maxInWindowRatio.toFixed(2)}× the limit)`,
          { size: 11, weight: over ? 'bold' : 'normal', color: over ? '#b3261e' : COLORS.text },
        ),
      );
      if (r === algorithms.length - 1) {
        for (let t = 0; t <= scenario.durationMs; t += report.windowMs) {
          parts.push(
            text(xOf(t), y0 + PANEL_H + 15, t === 0 ? '0' : formatDuration(t), {
              size: 11,
              anchor: t === 0 ? 'start' : t >= scenario.durationMs ? 'end' : 'middle',
              color: COLORS.muted,
            }),
          );
        }
      }
    });
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** The SVG inside a minimal HTML page, with the text report under it. */
export function renderHtml(report: CompareReport, textReport: string): string {
  return htmlPage(renderSvg(report), textReport);
}

/** A chart inside a minimal HTML page, with the text report under it. */
export function htmlPage(svg: string, textReport: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>floodgate compare</title>
<style>body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}pre{font-size:12px;overflow-x:auto}</style></head>
<body>
${svg}
<pre>${escapeXml(textReport)}</pre>
</body>
</html>
`;
}

function legend(x: number, y: number, W: string): string {
  const items: string[] = [];
  let at = x;
  const swatch = (color: string, label: string) => {
    items.push(`<rect x="${at}" y="${y - 9}" width="12" height="12" fill="${color}"/>`);
    items.push(text(at + 17, y + 1, label, { size: 12 }));
    at += 17 + label.length * 6.4 + 18;
  };
  swatch(COLORS.admitted, 'admitted (bars)');
  swatch(COLORS.rejected, 'rejected (bars)');
  items.push(line(at, y - 3, at + 22, y - 3, COLORS.line, undefined, 2));
  items.push(text(at + 27, y + 1, `admitted in the last ${W}`, { size: 12 }));
  at += 27 + 150;
  items.push(line(at, y - 3, at + 22, y - 3, COLORS.limit, '6 4', 1.2));
  items.push(text(at + 27, y + 1, 'limit', { size: 12 }));
  at += 27 + 48;
  items.push(line(at, y - 9, at, y + 3, COLORS.edge, '2 3'));
  items.push(text(at + 6, y + 1, 'fixed window edge', { size: 12 }));
  return items.join('\n');
}

export function line(
  x1: number,
  y1: number,
  x2: number,
  y2: number,
  color: string,
  dash?: string,
  width = 1,
): string {
  return `<line x1="${x1.toFixed(1)}" y1="${y1.toFixed(1)}" x2="${x2.toFixed(1)}" y2="${y2.toFixed(1)}" stroke="${color}" stroke-width="${width}"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`;
}

export function text(
  x: number,
  y: number,
  content: string,
  style: { size?: number; weight?: string; anchor?: string; color?: string; halo?: boolean } = {},
): string {
  const attributes = [
    `x="${x.toFixed(1)}"`,
    `y="${y.toFixed(1)}"`,
    style.size ? `font-size="${style.size}"` : '',
    style.weight && style.weight !== 'normal' ? `font-weight="${style.weight}"` : '',
    style.anchor ? `text-anchor="${style.anchor}"` : '',
    style.color ? `fill="${style.color}"` : '',
    style.halo ? 'stroke="#ffffff" stroke-width="3" paint-order="stroke"' : '',
  ].filter(Boolean);
  return `<text ${attributes.join(' ')}>${escapeXml(content)}</text>`;
}

export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
