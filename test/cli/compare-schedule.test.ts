/**
 * `floodgate compare --schedule` as a user runs it: a real process, real time, the scheduler
 * against the lab's upstream with a hidden limit. Asserted: what the upstream's limit makes
 * exact (it never serves more than it allows) and that reading its headers spares 429s; no rates.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LabRun } from '../../src/cli/compare/schedule-lab.js';
import { runCli } from './support/cli.js';

describe('floodgate compare --schedule', { timeout: 60_000 }, () => {
  it('runs the three modes; reading the headers, fewer calls get a 429 than without', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floodgate-schedule-'));
    try {
      const chart = join(dir, 'lab.svg');
      const result = await runCli([
        'compare',
        '--schedule',
        '--limit',
        '10/500ms',
        '--tokens',
        '20000',
        '--workers',
        '12',
        '--processes',
        '2',
        '--json',
        '--chart',
        chart,
      ]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as { requests: number; windows: number; runs: LabRun[] };
      expect(report.runs.map((run) => run.mode)).toEqual(['direct', 'rules', 'headers']);
      for (const run of report.runs) {
        expect(run.served).toBeLessThanOrEqual(report.requests * report.windows);
        expect(run.samples).toHaveLength(60);
      }
      const [direct, rules, headers] = report.runs as [LabRun, LabRun, LabRun];
      // 12 workers at 100 ms per answer ask for far more than 10 per 500 ms.
      expect(direct.limited).toBeGreaterThan(0);
      expect(rules.limited).toBeGreaterThan(0);
      // Reading the headers cuts the 429s; not to 0 yet: at each upstream reset the learned budget
      // lapses and the loose rules let a burst through before a response teaches the new window.
      expect(headers.limitedAfterFirstAnswer).toBeLessThan(rules.limitedAfterFirstAnswer);
      const svg = await readFile(chart, 'utf8');
      expect(svg).toContain('grants per second');
      expect(svg).toContain('scheduler, rules 2× too loose, headers read');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses options that belong to no lab', async () => {
    for (const [args, message] of [
      [['--workers', '5'], '--workers: only with --schedule'],
      [['--schedule', '--lease', '--redis', 'redis://127.0.0.1:1'], '--schedule: not with --lease'],
      [['--schedule', '--dialect', 'yaml'], "--dialect: 'yaml' is not one of openai, anthropic, github"],
    ] as const) {
      const result = await runCli(['compare', ...args]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(message);
    }
  });
});
