/**
 * `floodgate compare` as a user runs it: a real process, its JSON and text output, its chart,
 * and (against a real redis-server) the Redis measurements. The numbers are exact: the
 * scenarios are deterministic and the clock is simulated.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompareReport } from '../../src/cli/compare/report.js';
import { buildScenario } from '../../src/cli/compare/scenarios.js';
import { measure } from '../../src/cli/compare/simulate.js';
import { type RedisServer, rawCommand, startRedisServer } from '../support/redis-server.js';
import { runCli } from './support/cli.js';

let redis: RedisServer;
let dir: string;

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedisServer(), mkdtemp(join(tmpdir(), 'floodgate-compare-'))]);
});

afterAll(async () => {
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

type Row = CompareReport['scenarios'][number]['results'][number];

function rows(report: CompareReport, scenario: string): Record<string, Row> {
  const found = report.scenarios.find((s) => s.name === scenario);
  if (!found) throw new Error(`no scenario ${scenario}`);
  return Object.fromEntries(found.results.map((row) => [row.algorithm, row]));
}

function pick(row: Row | undefined) {
  return (
    row && {
      admitted: row.admitted,
      maxInWindow: row.maxInWindow,
      overLimit: row.overLimit,
      falseAllows: row.falseAllows,
      falseDenies: row.falseDenies,
    }
  );
}

// Each test starts up to six `floodgate` processes (~0.5 s of CPU each for Node, tsx and the
// CLI's modules): bounded work, but a loaded 2-core machine stretches it past the default 20 s.
describe('floodgate compare', { timeout: 60_000 }, () => {
  it('measures the boundary burst, steady traffic and a flood exactly (--json)', async () => {
    const result = await runCli([
      'compare',
      '--scenario',
      'boundary,steady,flood',
      '--limit',
      '10',
      '--window',
      '10s',
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as CompareReport;
    expect(report).toMatchObject({
      limit: 10,
      windowMs: 10_000,
      burst: 10,
      burstWindowMs: 1000,
      redis: null,
    });

    // 10 requests in the last second of a window, 10 in the first second of the next.
    const boundary = rows(report, 'boundary');
    // The fixed window admits 2 × the limit inside one sliding window: every request.
    expect(pick(boundary['fixed-window'])).toEqual({
      admitted: 20,
      maxInWindow: 20,
      overLimit: 10,
      falseAllows: 10,
      falseDenies: 0,
    });
    // The exact log admits the limit and never more.
    expect(pick(boundary['sliding-log'])).toEqual({
      admitted: 10,
      maxInWindow: 10,
      overLimit: 0,
      falseAllows: 0,
      falseDenies: 0,
    });
    // The previous window still weighs 9/10 or more in the first second: nothing passes.
    expect(pick(boundary['sliding-window'])).toEqual({
      admitted: 10,
      maxInWindow: 10,
      overLimit: 0,
      falseAllows: 0,
      falseDenies: 0,
    });
    // 10 tokens, then 1 per second refilled: at t=10s exactly one more token exists.
    for (const algorithm of ['token-bucket', 'gcra']) {
      expect(pick(boundary[algorithm])).toEqual({
        admitted: 11,
        maxInWindow: 11,
        overLimit: 1,
        falseAllows: 1,
        falseDenies: 0,
      });
    }

    // 60 requests evenly over 4 windows: the two exact-per-window algorithms admit 10 per window.
    const steady = rows(report, 'steady');
    expect(steady['fixed-window']?.admitted).toBe(40);
    expect(steady['sliding-log']?.admitted).toBe(40);
    expect(steady['sliding-log']?.maxInWindow).toBe(10);

    // The flooder gets the limit in each of 3 windows; the 20 polite clients (15 requests each) all pass.
    const flood = rows(report, 'flood');
    expect(report.scenarios.find((s) => s.name === 'flood')?.requests).toBe(300 + 20 * 15);
    expect(flood['sliding-log']?.admitted).toBe(30 + 300);
    expect(flood['fixed-window']?.admitted).toBe(30 + 300);

    // Without --redis the summary states the bound: at most one script call per decision.
    for (const row of report.summary) expect(row.redisCallsPerDecision).toBe(1);
    expect(report.summary.find((row) => row.algorithm === 'sliding-log')).toMatchObject({
      maxInWindowRatio: 1,
      falseAllows: 0,
      falseDenies: 0,
    });
  });

  it('prints the table, writes a legible SVG and an HTML chart', async () => {
    const svg = join(dir, 'chart.svg');
    const result = await runCli(['compare', '--scenario', 'boundary', '--limit', '10/10s', '--chart', svg]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('boundary: one client sending the limit');
    expect(result.stdout).toMatch(/fixed-window\s+20\s+0\s+20 \(2\.00×\)/);
    expect(result.stdout).toMatch(/sliding-log\s+10\s+10\s+10 \(1\.00×\)/);
    expect(result.stdout).toContain('n/a (use --redis)');
    expect(result.stdout).toContain('≤ 1 (one script call, shared by checks issued together)');
    expect(result.stdout).toContain(`Chart written to ${svg}`);
    const content = await readFile(svg, 'utf8');
    expect(content.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    for (const algorithm of ['fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra']) {
      expect(content).toContain(`>${algorithm}</text>`);
    }
    expect(content).toContain('max 20 in any 10s (2.00× the limit)');
    expect(content.match(/<polyline /g)).toHaveLength(5);

    const html = join(dir, 'chart.html');
    const page = await runCli([
      'compare',
      '--scenario',
      'steady',
      '--limit',
      '5',
      '--window',
      '1s',
      '--chart',
      html,
    ]);
    expect(page.code).toBe(0);
    const text = await readFile(html, 'utf8');
    expect(text).toMatch(/^<!doctype html>/);
    expect(text).toContain('<svg');
    expect(text).toContain('<pre>floodgate compare: limit 5 per 1s');
  });

  it('--lease: processes at uneven rates on one key, without and with quotaLease, never above the limit', async () => {
    const result = await runCli([
      'compare',
      '--lease',
      '--redis',
      redis.url,
      '--limit',
      '300/300ms',
      '--processes',
      '3',
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as {
      processes: number;
      runs: {
        quotaLease: boolean;
        samples: { admitted: number; callsPerDecision: number; stranded: number }[];
      }[];
    };
    expect(report.processes).toBe(3);
    expect(report.runs.map((run) => run.quotaLease)).toEqual([false, true]);
    for (const run of report.runs) {
      // Every tenth of a window for 3 windows.
      expect(run.samples).toHaveLength(30);
      for (const sample of run.samples) expect(sample.admitted).toBeLessThanOrEqual(300);
    }
    const [without, withLease] = report.runs.map((run) => run.samples.at(-1)?.callsPerDecision ?? 1);
    expect(withLease).toBeLessThan(without as number);
    expect(await rawCommand(redis.port, 'DBSIZE')).toBe(':0');
    expect((await runCli(['compare', '--processes', '3'])).stderr).toContain(
      '--processes: only with --lease',
    );
  });

  // The default lab: 3 windows of 1 s, without and then with leasing, on the in-process stand-in
  // for a shared store: about 6 s of real time, and a process start.
  it('--lease by default: takes seconds without Redis, shows progress, prints its report', {
    timeout: 30_000,
  }, async () => {
    const result = await runCli(['compare', '--lease', '--progress']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('without quotaLease done\nwith quotaLease done\n');
    const lines = result.stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'floodgate compare --lease: 4 processes at uneven rates (1 : 2 : … : 4) sending 1.5 × the limit, one fixed-window key, limit 1000 per 1000 ms',
      'store: memory (in-process stand-in for a shared store)',
    ]);
    const runs = ['without quotaLease:', 'with quotaLease:'].map((title) => {
      const start = lines.indexOf(title) + 2;
      return lines.slice(start, start + 30).map((line) => line.trim().split(/\s+/).map(Number));
    });
    for (const samples of runs) {
      // Every tenth of a window for 3 windows: ms, decisions, calls/decision, admitted, stranded.
      expect(samples.map((sample) => sample.length)).toEqual(Array(30).fill(5));
      for (const [, , , admitted] of samples) expect(admitted).toBeLessThanOrEqual(1000);
    }
    const [without, withLease] = runs.map((samples) => samples.at(-1)?.[2] ?? 1);
    expect(withLease).toBeLessThan(without as number);
  });

  it('measures Redis memory per key and one script call per decision on a real Redis, and cleans up', async () => {
    const result = await runCli([
      'compare',
      '--scenario',
      'boundary',
      '--limit',
      '10',
      '--window',
      '10s',
      '--redis',
      redis.url,
      '--json',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as CompareReport;
    expect(report.redis).toBe(redis.url);
    const boundary = rows(report, 'boundary');
    for (const row of Object.values(boundary)) {
      // At most one script call per decision; concurrent clients' checks share a batched call.
      expect(row.redis?.callsPerDecision, row.algorithm).toBeGreaterThan(0);
      expect(row.redis?.callsPerDecision, row.algorithm).toBeLessThanOrEqual(1);
      // The Lua twin decides exactly like the TypeScript specification.
      expect(row.redis?.mismatches, row.algorithm).toBe(0);
      expect(row.redis?.memoryPerKeyBytes, row.algorithm).toBeGreaterThan(0);
    }
    // The fixed window admitted all 20, one at a time: each call read the key's override and its
    // counter with one MGET and wrote the counter back.
    expect(boundary['fixed-window']?.redis?.commandsPerDecision).toBe(2);
    // A sliding log of 10 entries costs more than one counter.
    expect(boundary['sliding-log']?.redis?.memoryPerKeyBytes).toBeGreaterThan(
      boundary['fixed-window']?.redis?.memoryPerKeyBytes ?? 0,
    );
    // Nothing left behind.
    expect(await rawCommand(redis.port, 'DBSIZE')).toBe(':0');
  });

  it('exits 2 with one line for usage errors, 1 when Redis is unreachable, 0 for --help', async () => {
    const [badLimit, unknown, badChart, badScenario, help, noRedis] = await Promise.all([
      runCli(['compare', '--limit', 'lots']),
      runCli(['compare', '--frobnicate']),
      runCli(['compare', '--chart', 'out.png']),
      runCli(['compare', '--scenario', 'tsunami']),
      runCli(['compare', '--help']),
      runCli(['compare', '--scenario', 'boundary', '--redis', 'redis://127.0.0.1:1']),
    ]);
    for (const result of [badLimit, unknown, badChart, badScenario]) {
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    expect(badLimit.stderr).toContain("--limit: 'lots' must be an integer from 1 to 10000");
    expect(unknown.stderr).toContain("Unknown option '--frobnicate'");
    expect(badChart.stderr).toContain("--chart: 'out.png' must end in .svg or .html");
    expect(badScenario.stderr).toContain(
      "--scenario: 'tsunami' is not one of steady, bursty, boundary, flood, many, all",
    );
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: floodgate compare [options]');
    expect(noRedis.code).toBe(1);
    expect(noRedis.stderr.trim().split('\n')).toHaveLength(1);
    expect(noRedis.stderr).toContain('cannot connect to Redis (redis://127.0.0.1:1)');
  });
});

describe('compare measurements', () => {
  it('counts admissions in half-open windows (t − W, t] and judges each by the exact rule', () => {
    const scenario = {
      ...buildScenario('boundary', { limit: 2, windowMs: 100, seed: 1 }),
      keyNames: ['a'],
      focusKey: 0,
      // a at 0, 50, 100, 150: (0, 100] holds 50 and 100, never 0 and 100 together.
      times: Float64Array.from([0, 50, 100, 150]),
      keys: Uint32Array.from([0, 0, 0, 0]),
    };
    const all = Uint8Array.from([1, 1, 1, 1]);
    const measured = measure(scenario, all, Uint8Array.from([1, 1, 1, 1]), 2, 100, 10);
    expect(measured).toMatchObject({ admitted: 4, maxInWindow: 2, overLimit: 0, maxInBurstWindow: 1 });
    const refused = measure(scenario, Uint8Array.from([1, 1, 0, 1]), all, 2, 100, 10);
    // The request at 100 fit (only 50 was in (0, 100]): refusing it was a false deny either way.
    expect(refused).toMatchObject({ admitted: 3, refusedWithinLimit: 1, falseDenies: 1, falseAllows: 0 });
  });
});
