/** `floodgate compare`: parse the options, run the comparison, print the table, JSON or a chart. */
import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { Redis } from 'ioredis';
import type { AlgorithmName } from '../../index.js';
import { createScheduler } from '../../index.js';
import { MAX_UNITS_TIMES_WINDOW, RATE_ALGORITHM_NAMES, SLIDING_LOG_MAX_LIMIT } from '../../internal.js';
import {
  durationOption,
  integerOption,
  parseCommandArgs,
  parseRate,
  RuntimeFailure,
  stringOption,
  UsageError,
} from '../args.js';
import { createProgress } from '../progress.js';
import { connectRedis, redisTargetFrom } from '../redis.js';
import { compareAdaptive } from './adaptive-command.js';
import { calendarDemoText, runCalendarDemo } from './calendar-demo.js';
import { htmlPage, renderHtml, renderSvg } from './chart.js';
import { UPSTREAM_DIALECTS, type UpstreamDialect } from './hidden-limit.js';
import { type LeaseBackend, leaseText, memoryBackend, redisBackend, runLeaseComparison } from './lease.js';
import { buildReport, reportJson, reportText } from './report.js';
import { type CompareSettings, runComparison } from './run.js';
import { SCENARIO_NAMES, type ScenarioName } from './scenarios.js';
import { type LabSchedulerFactory, runScheduleLab, type ScheduleLabSettings } from './schedule-lab.js';
import { scheduleSvg, scheduleText } from './schedule-report.js';

export const COMPARE_HELP = `Usage: floodgate compare [options]

Runs every algorithm on the same simulated traffic (steady, bursty, boundary, flood, many) and
prints the comparison table with measured values: the most requests admitted in any window
against the limit, false allows and false denies against the exact sliding log on the same
traffic, the most admitted in any tenth of a window, and (with --redis) Redis memory per key.

Options:
  --scenario NAME     steady, bursty, boundary, flood, many or all (default all); a comma list works
  --limit N           requests per window (default 100); N/WINDOW sets both, e.g. 100/1m
  --window DURATION   window length: 500ms, 10s, 1m, 1h (default 1m)
  --burst N           token-bucket and gcra capacity (default: the limit)
  --algorithms LIST   comma-separated algorithms (default: all of ${RATE_ALGORITHM_NAMES.join(', ')})
  --clients N         clients in the 'many' scenario (default: about 200,000 requests in total)
  --seed N            seed of the random scenarios (default 1)
  --redis URL         also replay every run on this Redis to measure MEMORY USAGE per key and the
                      commands per decision (writes under a unique prefix, deletes it afterwards)
  --lease             instead: N processes (--processes, default 4) at uneven rates share one
                      fixed-window key, without and then with quotaLease, for 3 windows in real
                      time (default --limit 1000/1s: about 6 s; --window 1m runs 6 minutes), on
                      --redis or else on an in-process stand-in for a shared store; prints store
                      calls per decision and the quota stranded in slices every tenth of a window
  --processes N       processes of --lease and --schedule (default 4)
  --schedule          instead: a lab of the scheduler. --workers (default 50) in --processes
                      call an upstream that allows --limit (default 60/1s) requests and --tokens
                      (default 100000) per window, answering in --dialect headers (openai,
                      anthropic, github, github-secondary, ietf; default openai), for 3 windows
                      in real time, three ways: without a scheduler, with one whose rules are
                      twice too loose, and with the same reading the upstream's headers; prints
                      served calls, upstream 429s and the budget used (--chart: queue depth,
                      grants and 429s over time)
  --calendar          instead: a calendar rule (period: day in America/New_York, month anchored on
                      the 31st) beside a fixed window of 1d or 30d, on the same checks across a DST
                      change and a month end, with the exact time each quota comes back
  --adaptive          instead: a simulated lab of the adaptive concurrency limit (an upstream
                      that slows past its capacity, offered 3× it; floodgate compare --adaptive
                      --help lists its options)
  --workers N         workers of --schedule (default 50)
  --tokens N          tokens per window the --schedule upstream allows (default 100000)
  --dialect NAME      headers of the --schedule upstream (default openai)
  --json              print the results as JSON on stdout
  --chart FILE        write admitted vs rejected over time per algorithm to FILE (.svg or .html)
  --progress          show progress on stderr even when stderr is not a terminal
  -h, --help          show this help

Exit codes: 0 ok, 1 runtime failure (e.g. Redis unreachable), 2 usage error.
`;

const OPTIONS = {
  scenario: { type: 'string' },
  limit: { type: 'string' },
  window: { type: 'string' },
  burst: { type: 'string' },
  algorithms: { type: 'string' },
  clients: { type: 'string' },
  seed: { type: 'string' },
  redis: { type: 'string' },
  json: { type: 'boolean' },
  chart: { type: 'string' },
  progress: { type: 'boolean' },
  lease: { type: 'boolean' },
  processes: { type: 'string' },
  schedule: { type: 'boolean' },
  calendar: { type: 'boolean' },
  workers: { type: 'string' },
  tokens: { type: 'string' },
  dialect: { type: 'string' },
} as const;

/** Largest limit compare accepts: its scenarios send up to 30 × the limit per client. */
const MAX_COMPARE_LIMIT = 10_000;
/**
 * `--lease`'s defaults: a window short enough that a run (3 windows, twice) takes seconds, and a
 * limit high enough that every process's key gets hot and takes slices.
 */
const LEASE_LIMIT = 1000;
const LEASE_WINDOW_MS = 1000;

export function parseCompareSettings(argv: readonly string[]): {
  help: boolean;
  settings: CompareSettings;
  json: boolean;
  chart?: string;
  redis?: string;
  progress: boolean;
  lease?: { processes: number };
  schedule?: ScheduleLabSettings;
  calendar: boolean;
} {
  const parsed = parseCommandArgs('compare', argv, OPTIONS, 0);
  const limitText = stringOption(parsed, 'limit');
  const windowText = stringOption(parsed, 'window');
  const lease = parsed.values.lease === true;
  let limit = lease ? LEASE_LIMIT : 100;
  let windowMs = lease ? LEASE_WINDOW_MS : 60_000;
  if (limitText?.includes('/')) {
    if (windowText !== undefined)
      throw new UsageError('--limit N/WINDOW already sets the window; drop --window');
    ({ limit, windowMs } = parseRate(limitText, '--limit'));
  } else if (limitText !== undefined) {
    limit = integerOption(limitText, '--limit', 1, MAX_COMPARE_LIMIT);
  }
  if (limit > MAX_COMPARE_LIMIT) {
    throw new UsageError(`--limit: ${limit} must be at most ${MAX_COMPARE_LIMIT} for compare`);
  }
  if (windowText !== undefined) windowMs = durationOption(windowText, '--window');
  if (windowMs < 10) throw new UsageError('--window: must be at least 10ms');

  const scenarioText = stringOption(parsed, 'scenario') ?? 'all';
  const scenarios = listOption(scenarioText, '--scenario', [...SCENARIO_NAMES, 'all']).flatMap((name) =>
    name === 'all' ? [...SCENARIO_NAMES] : [name as ScenarioName],
  );
  const algorithmsText = stringOption(parsed, 'algorithms');
  const algorithms =
    algorithmsText === undefined
      ? [...RATE_ALGORITHM_NAMES]
      : (listOption(algorithmsText, '--algorithms', RATE_ALGORITHM_NAMES) as AlgorithmName[]);
  if (algorithms.includes('sliding-log') && limit > SLIDING_LOG_MAX_LIMIT) {
    throw new UsageError(`--limit: sliding-log accepts at most ${SLIDING_LOG_MAX_LIMIT}`);
  }

  const burstText = stringOption(parsed, 'burst');
  const burst =
    burstText === undefined ? undefined : integerOption(burstText, '--burst', 1, 30 * MAX_COMPARE_LIMIT);
  if (Math.max(limit, burst ?? 0) * windowMs > MAX_UNITS_TIMES_WINDOW) {
    throw new UsageError('--limit × --window is too large; use a smaller limit or window');
  }
  const clientsText = stringOption(parsed, 'clients');
  const seedText = stringOption(parsed, 'seed');
  const chart = stringOption(parsed, 'chart');
  if (chart !== undefined && !['.svg', '.html', '.htm'].includes(extname(chart).toLowerCase())) {
    throw new UsageError(`--chart: '${chart}' must end in .svg or .html`);
  }
  const redis = stringOption(parsed, 'redis');
  if (redis !== undefined) redisTargetFrom(redis, undefined, {});
  const processesText = stringOption(parsed, 'processes');
  const schedule = parsed.values.schedule === true;
  if (schedule && lease) throw new UsageError('--schedule: not with --lease; run one lab at a time');
  const calendar = parsed.values.calendar === true;
  if (calendar && (lease || schedule || redis !== undefined || chart !== undefined)) {
    throw new UsageError(
      '--calendar: a demo of its own, on an in-process store; not with --lease, --schedule, --redis or --chart',
    );
  }
  if (schedule && redis !== undefined) {
    throw new UsageError('--schedule: its processes share one in-process store; drop --redis');
  }
  if (!lease && !schedule && processesText !== undefined) {
    throw new UsageError('--processes: only with --lease or --schedule');
  }
  for (const flag of ['workers', 'tokens', 'dialect'] as const) {
    if (!schedule && parsed.values[flag] !== undefined)
      throw new UsageError(`--${flag}: only with --schedule`);
  }
  return {
    help: parsed.values.help === true,
    settings: {
      scenarios: [...new Set(scenarios)],
      algorithms: [...new Set(algorithms)],
      limit,
      windowMs,
      ...(burst !== undefined ? { burst } : {}),
      seed: seedText === undefined ? 1 : integerOption(seedText, '--seed', 0, 2 ** 32 - 1),
      ...(clientsText !== undefined ? { clients: integerOption(clientsText, '--clients', 1, 100_000) } : {}),
      chartBuckets: chart === undefined ? 0 : 120,
    },
    json: parsed.values.json === true,
    ...(chart !== undefined ? { chart } : {}),
    ...(redis !== undefined ? { redis } : {}),
    progress: parsed.values.progress === true,
    calendar,
    ...(lease
      ? {
          lease: {
            processes: processesText === undefined ? 4 : integerOption(processesText, '--processes', 1, 64),
          },
        }
      : {}),
    ...(schedule
      ? {
          schedule: {
            // The lab's own defaults: a limit a few seconds of real time show well.
            requests: limitText === undefined ? 60 : limit,
            windowMs: limitText === undefined && windowText === undefined ? 1000 : windowMs,
            tokens: integerOption(stringOption(parsed, 'tokens') ?? '100000', '--tokens', 1, 1_000_000_000),
            windows: 3,
            processes: processesText === undefined ? 4 : integerOption(processesText, '--processes', 1, 64),
            workers: integerOption(stringOption(parsed, 'workers') ?? '50', '--workers', 1, 1000),
            dialect: listOption(
              stringOption(parsed, 'dialect') ?? 'openai',
              '--dialect',
              UPSTREAM_DIALECTS,
            )[0] as UpstreamDialect,
            latencyMs: 100,
            seed: seedText === undefined ? 1 : integerOption(seedText, '--seed', 0, 2 ** 32 - 1),
            buckets: 60,
          },
        }
      : {}),
  };
}

function listOption(value: string, flag: string, allowed: readonly string[]): string[] {
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (items.length === 0) throw new UsageError(`${flag}: give at least one of ${allowed.join(', ')}`);
  for (const item of items) {
    if (!allowed.includes(item)) {
      throw new UsageError(`${flag}: '${item}' is not one of ${allowed.join(', ')}`);
    }
  }
  return items;
}

async function compareLeases(options: ReturnType<typeof parseCompareSettings>): Promise<number> {
  const settings = {
    limit: options.settings.limit,
    windowMs: options.settings.windowMs,
    processes: (options.lease as { processes: number }).processes,
    windows: 3,
  };
  const progress = createProgress(process.stderr, options.progress);
  const connection =
    options.redis === undefined
      ? undefined
      : await connectRedis({ url: options.redis }, { persistent: false });
  const backend: LeaseBackend =
    connection === undefined
      ? memoryBackend()
      : redisBackend(`Redis (${connection.label})`, connection.client, connection.masters()[0] as Redis);
  try {
    const runs = await runLeaseComparison(settings, backend, progress);
    process.stdout.write(
      options.json
        ? `${JSON.stringify({ ...settings, store: backend.label, runs })}\n`
        : leaseText(settings, backend.label, runs),
    );
  } catch (error) {
    throw new RuntimeFailure(`compare --lease on ${backend.label} failed: ${(error as Error).message}`);
  } finally {
    await connection?.close();
  }
  return 0;
}

async function compareSchedules(
  settings: ScheduleLabSettings,
  options: ReturnType<typeof parseCompareSettings>,
): Promise<number> {
  const progress = createProgress(process.stderr, options.progress);
  const runs = await runScheduleLab(settings, createScheduler as LabSchedulerFactory, (mode) =>
    progress.step(`compare --schedule: ${mode}`),
  );
  progress.end();
  const text = scheduleText(settings, runs);
  process.stdout.write(options.json ? `${JSON.stringify({ ...settings, runs })}\n` : text);
  if (options.chart !== undefined) {
    const svg = scheduleSvg(settings, runs);
    await writeChart(
      options.chart,
      options.chart.toLowerCase().endsWith('.svg') ? svg : htmlPage(svg, text),
      options.json,
    );
  }
  return 0;
}

async function writeChart(file: string, content: string, quiet: boolean): Promise<void> {
  try {
    await writeFile(file, content);
  } catch (error) {
    throw new RuntimeFailure(`--chart: cannot write ${file}: ${(error as Error).message}`);
  }
  if (!quiet) process.stdout.write(`\nChart written to ${file}\n`);
}

export async function compareCommand(argv: readonly string[]): Promise<number> {
  // The adaptive lab has options of its own: it is parsed apart from the algorithm comparison.
  if (argv.includes('--adaptive')) return compareAdaptive(argv);
  const options = parseCompareSettings(argv);
  if (options.help) {
    process.stdout.write(COMPARE_HELP);
    return 0;
  }
  if (options.lease !== undefined) return compareLeases(options);
  if (options.calendar) {
    const rows = await runCalendarDemo();
    process.stdout.write(options.json ? `${JSON.stringify({ calendar: rows })}\n` : calendarDemoText(rows));
    return 0;
  }
  if (options.schedule !== undefined) return compareSchedules(options.schedule, options);
  const progress = createProgress(process.stderr, options.progress);
  const connection =
    options.redis === undefined
      ? undefined
      : await connectRedis({ url: options.redis }, { persistent: false });
  let report: ReturnType<typeof buildReport>;
  try {
    const redisClient = connection?.masters()[0];
    const scenarios = await runComparison(options.settings, progress, redisClient);
    report = buildReport(options.settings, scenarios, connection?.label ?? null);
  } catch (error) {
    progress.end();
    if (connection !== undefined && error instanceof Error && !(error instanceof UsageError)) {
      throw new RuntimeFailure(`compare on Redis (${connection.label}) failed: ${error.message}`);
    }
    throw error;
  } finally {
    await connection?.close();
  }
  const text = reportText(report);
  process.stdout.write(options.json ? `${reportJson(report)}\n` : text);
  if (options.chart !== undefined) {
    const content = options.chart.toLowerCase().endsWith('.svg')
      ? renderSvg(report)
      : renderHtml(report, text);
    await writeChart(options.chart, content, options.json);
  }
  return 0;
}
