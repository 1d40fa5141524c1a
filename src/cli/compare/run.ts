/**
 * The comparison itself: every selected algorithm over every selected scenario on the memory
 * store with a simulated clock, measured against the exact sliding log on the same traffic,
 * and (optionally) replayed on a real Redis for memory and command counts.
 */
import type { Redis } from 'ioredis';
import { type AlgorithmName, memoryStore } from '../../index.js';
import type { Progress } from '../progress.js';
import { measureOnRedis, type RedisMeasurement } from './on-redis.js';
import { buildScenario, type Scenario, type ScenarioName } from './scenarios.js';
import { type Measured, measure, type RuleParams, runScenario, type Series, series } from './simulate.js';

export interface CompareSettings {
  scenarios: ScenarioName[];
  algorithms: AlgorithmName[];
  limit: number;
  windowMs: number;
  /** token-bucket and gcra capacity; undefined = the limit. */
  burst?: number;
  seed: number;
  clients?: number;
  /** Buckets per chart panel; 0 = no chart data. */
  chartBuckets: number;
}

export interface AlgorithmResult extends Measured {
  algorithm: AlgorithmName;
  /** maxInWindow / limit. */
  maxInWindowRatio: number;
  /** Present when run with --redis. */
  redis: RedisMeasurement | null;
  /** The focus client's traffic over time, for the chart. */
  series?: Series;
}

export interface ScenarioResult {
  name: ScenarioName;
  description: string;
  durationMs: number;
  clients: number;
  requests: number;
  focusClient: string;
  results: AlgorithmResult[];
}

/** A simulated start time aligned to the window, so fixed windows start where the scenarios expect. */
export function alignedStart(windowMs: number): number {
  return Math.ceil(1_700_000_000_000 / windowMs) * windowMs;
}

/** The interval the "burst handling" column looks at: a tenth of the window (at least 1 ms). */
export function burstWindowOf(windowMs: number): number {
  return Math.max(1, Math.round(windowMs / 10));
}

export async function runComparison(
  settings: CompareSettings,
  progress: Progress,
  redis?: Redis,
): Promise<ScenarioResult[]> {
  const start = alignedStart(settings.windowMs);
  const burstWindowMs = burstWindowOf(settings.windowMs);
  const results: ScenarioResult[] = [];
  for (const name of settings.scenarios) {
    const scenario: Scenario = buildScenario(name, {
      limit: settings.limit,
      windowMs: settings.windowMs,
      seed: settings.seed,
      ...(settings.clients !== undefined ? { clients: settings.clients } : {}),
    });
    const total = scenario.times.length;
    const rule = (algorithm: AlgorithmName): RuleParams => ({
      algorithm,
      limit: settings.limit,
      windowMs: settings.windowMs,
      ...(settings.burst !== undefined ? { burst: settings.burst } : {}),
    });
    const run = async (algorithm: AlgorithmName) => {
      const label = `compare ${name}: ${algorithm}`;
      const allowed = await runScenario(
        scenario,
        rule(algorithm),
        (clock) => memoryStore({ clock, maxKeys: scenario.keyNames.length + 1 }),
        { start, prefix: 'compare', onProgress: (done) => progress.update(label, done, total) },
      );
      progress.step(label);
      return allowed;
    };
    // The exact sliding log is the reference every other row is compared with.
    const reference = await run('sliding-log');
    const rows: AlgorithmResult[] = [];
    for (const algorithm of settings.algorithms) {
      const allowed = algorithm === 'sliding-log' ? reference : await run(algorithm);
      const measured = measure(
        scenario,
        allowed,
        reference,
        settings.limit,
        settings.windowMs,
        burstWindowMs,
      );
      let onRedis: RedisMeasurement | null = null;
      if (redis !== undefined) {
        const label = `compare ${name}: ${algorithm} on Redis`;
        onRedis = await measureOnRedis(redis, scenario, rule(algorithm), allowed, {
          start,
          onProgress: (done, of) => progress.update(label, done, of),
        });
        progress.step(label);
      }
      rows.push({
        algorithm,
        ...measured,
        maxInWindowRatio: measured.maxInWindow / settings.limit,
        redis: onRedis,
        ...(settings.chartBuckets > 0
          ? { series: series(scenario, allowed, settings.windowMs, settings.chartBuckets) }
          : {}),
      });
    }
    results.push({
      name,
      description: scenario.description,
      durationMs: scenario.durationMs,
      clients: scenario.keyNames.length,
      requests: total,
      focusClient: scenario.keyNames[scenario.focusKey] as string,
      results: rows,
    });
  }
  progress.end();
  return results;
}
