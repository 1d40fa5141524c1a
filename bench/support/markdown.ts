/** Markdown tables and number formats for the report. */

/**
 * A table laid out as Biome formats Markdown (cells padded to the column's width, first column
 * left-aligned, the others right-aligned), so a freshly written report passes `biome check`.
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) =>
    Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const pad = (cell: string, i: number) =>
    i === 0 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number);
  const line = (cells: readonly string[]) => `| ${cells.map(pad).join(' | ')} |`;
  const align = widths.map((width, i) =>
    i === 0 ? `:${'-'.repeat(width - 1)}` : `${'-'.repeat(width - 1)}:`,
  );
  return [line(headers), `| ${align.join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** An integer with thousands separators. */
export function count(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '—';
}

/** A ratio such as `1.23×`; `—` when undefined or not finite. */
export function ratio(numerator: number | undefined, denominator: number | undefined): string {
  if (numerator === undefined || denominator === undefined || denominator === 0) return '—';
  const value = numerator / denominator;
  if (!Number.isFinite(value)) return '—';
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)}×`;
}

/** A latency in microseconds. */
export function micros(value: number): string {
  if (!Number.isFinite(value)) return '—';
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

/** A small per-decision number such as 0.010 or 6.00. */
export function perDecision(value: number): string {
  if (!Number.isFinite(value)) return '—';
  return value < 0.1 ? value.toFixed(3) : value.toFixed(2);
}

export function bold(text: string): string {
  return `**${text}**`;
}
