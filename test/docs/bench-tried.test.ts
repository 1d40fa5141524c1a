/**
 * BENCHMARKS.md's list of what was tried (bench/tried.ts): every entry links to a dated
 * docs/bench-log.md entry that exists, so the generated report never points at a missing one.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { triedSection } from '../../bench/report.js';
import { ATTEMPTS, anchorOf } from '../../bench/tried.js';

const LOG = readFileSync(new URL('../../docs/bench-log.md', import.meta.url), 'utf8');
const LOG_HEADINGS = [...LOG.matchAll(/^## (.+)$/gm)].map(([, title = '']) => title);

describe("the report's list of what was tried", () => {
  it.each(ATTEMPTS.map((attempt) => [attempt.change, attempt]))('%s: its log entry exists', (_, attempt) => {
    expect(LOG_HEADINGS).toContain(attempt.logEntry);
    expect(LOG).toContain(`](#${anchorOf(attempt.logEntry)})`);
  });

  it('is a section of the report with one row per attempt, linked to its log entry', () => {
    const section = triedSection();
    expect(section.startsWith('## 7. What was tried, and what each change gained\n')).toBe(true);
    const rows = section.split('\n').filter((line) => line.includes('](docs/bench-log.md#'));
    expect(rows).toHaveLength(ATTEMPTS.length);
    ATTEMPTS.forEach((attempt, i) => {
      expect(rows[i]).toContain(attempt.change);
      expect(rows[i]).toContain(`(docs/bench-log.md#${anchorOf(attempt.logEntry)})`);
      expect(rows[i]).toMatch(attempt.kept ? /\| +kept \|/ : /\| left out \|/);
    });
  });
});
