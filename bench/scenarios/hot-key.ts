/**
 * One hot key on one Redis: 4 worker processes check it in tight loops, with and without
 * `quotaLease`. Two limits: one no run reaches (decisions/s and Redis calls per decision of
 * admissions), and one the demand exceeds in every window (over-admission: the most admitted in
 * one aligned window above the limit; stranded: the mean shortfall of the full windows).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { BenchContext } from '../support/context.js';
import type { HotKeyJob, HotKeyResult } from '../support/hot-key-worker.js';

const run = promisify(execFile);
const WORKER = fileURLToPath(new URL('../support/hot-key-worker.ts', import.meta.url));
const PROCESSES = 4;
const LANES = 16;
/** Per 1 s window: far above what 4 processes reach, then well below it. */
const UNREACHED = 1_000_000_000;
export const HOT_KEY_LIMIT = 5000;
const WINDOW_MS = 1000;

export interface HotKeyRow {
  quotaLease: boolean;
  limit: number;
  decisionsPerSecond: number;
  callsPerDecision: number;
  /** With the reached limit: the most admitted in one window, above the limit (0: never above). */
  overAdmission?: number;
  /** With the reached limit, when demand exceeded it: mean unused share of the limit over full windows. */
  stranded?: number;
}

async function scriptCalls(context: BenchContext): Promise<number> {
  const stats = await context.admin.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g))
    calls += Number(match[1]);
  return calls;
}

async function oneRun(context: BenchContext, quotaLease: boolean, limit: number): Promise<HotKeyRow> {
  await context.admin.flushall();
  await context.admin.config('RESETSTAT');
  const seconds = context.settings.seconds;
  const job: HotKeyJob = {
    port: context.server.port,
    key: 'hot',
    limit,
    windowMs: WINDOW_MS,
    quotaLease,
    lanes: LANES,
    seconds,
  };
  const results = await Promise.all(
    Array.from({ length: PROCESSES }, async () => {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(job)]);
      return JSON.parse(stdout) as HotKeyResult;
    }),
  );
  const decisions = results.reduce((total, result) => total + result.decisions, 0);
  const row: HotKeyRow = {
    quotaLease,
    limit,
    decisionsPerSecond: decisions / seconds,
    callsPerDecision: (await scriptCalls(context)) / decisions,
  };
  if (limit === UNREACHED) return row;
  const windows = new Map<number, number>();
  for (const result of results)
    for (const [window, count] of Object.entries(result.perWindow))
      windows.set(Number(window), (windows.get(Number(window)) ?? 0) + count);
  const ordered = [...windows.entries()].sort((a, b) => a[0] - b[0]).map(([, count]) => count);
  // The first and last windows are partly outside the run.
  const full = ordered.slice(1, -1);
  row.overAdmission = Math.max(0, ...ordered.map((count) => count - limit));
  // Stranded quota means something only where demand exceeded the limit.
  if (row.decisionsPerSecond * (WINDOW_MS / 1000) <= limit) return row;
  row.stranded =
    full.length === 0 ? 0 : full.reduce((total, count) => total + (limit - count), 0) / full.length / limit;
  return row;
}

export async function runHotKey(context: BenchContext): Promise<HotKeyRow[]> {
  const rows: HotKeyRow[] = [];
  for (const limit of [UNREACHED, HOT_KEY_LIMIT]) {
    for (const quotaLease of [false, true]) {
      const row = await oneRun(context, quotaLease, limit);
      rows.push(row);
      context.log(
        `hot-key ${quotaLease ? 'quotaLease' : 'no lease  '} limit ${limit}: ${Math.round(row.decisionsPerSecond)} decisions/s, ${row.callsPerDecision.toFixed(4)} calls/decision${row.stranded === undefined ? '' : `, over-admission ${row.overAdmission}, stranded ${(row.stranded * 100).toFixed(2)}%`}`,
      );
    }
  }
  return rows;
}
