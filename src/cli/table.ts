/** Plain-text tables for terminal output: padded columns, numbers right-aligned. */

export type Align = 'left' | 'right';

export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  align: readonly Align[],
): string {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => {
        const width = widths[column] as number;
        return align[column] === 'right' ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}
