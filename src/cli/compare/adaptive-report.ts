/**
 * What `floodgate compare --adaptive` prints: a table per controller (served and shed by
 * criticality, timeouts, p99 latency against the unloaded p99, goodput) and a chart of each over
 * time (the limit against the capacity, requests in flight upstream, p99 latency, shed per second).
 */
import { renderTable } from '../table.js';
import type { AdaptiveBucket, AdaptiveController, AdaptiveLabSettings, AdaptiveRun } from './adaptive-lab.js';
import { COLORS } from './chart.js';
import { panelSvg } from './panels.js';

const CONTROLLER_TITLES: Record<AdaptiveController, string> = {
  none: 'no limit: every request goes upstream',
  adaptive: 'adaptive limit, shedding by criticality',
};

function describeLab(settings: AdaptiveLabSettings): string {
  const changes = settings.changes.map((change) => `${change.capacity} at ${change.atMs / 1000}s`).join(', ');
  return `floodgate compare --adaptive: an upstream of capacity ${settings.capacity} (${settings.latencyMs} ms each up to it, slower past it${changes ? `; then ${changes}` : ''}), offered ${settings.offered}× its capacity for ${settings.durationMs / 1000} s, clients giving up after ${settings.timeoutMs} ms (simulated time)`;
}

const percent = (part: number, whole: number) =>
  whole === 0 ? '-' : `${((part / whole) * 100).toFixed(1)}%`;

export function adaptiveText(
  settings: AdaptiveLabSettings,
  runs: readonly AdaptiveRun[],
  unloadedP99Ms: number,
): string {
  const rows = runs.map((run) => [
    CONTROLLER_TITLES[run.controller],
    percent(run.served.critical, run.offered.critical),
    percent(run.served.standard, run.offered.standard),
    percent(run.served.sheddable, run.offered.sheddable),
    String(run.timedOut),
    `${run.p99Ms.toFixed(1)} ms (${(run.p99Ms / unloadedP99Ms).toFixed(2)}×)`,
    `${(run.goodput * 100).toFixed(1)}%`,
  ]);
  const table = renderTable(
    [
      'controller',
      'critical served',
      'standard served',
      'sheddable served',
      'timed out',
      'p99 (× unloaded)',
      'goodput',
    ],
    rows,
    ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
  );
  return `${describeLab(settings)}\n\n${table}\nunloaded p99: ${unloadedP99Ms.toFixed(1)} ms; goodput: requests served in time over what the capacity could serve\n`;
}

export function adaptiveSvg(settings: AdaptiveLabSettings, runs: readonly AdaptiveRun[]): string {
  const seconds = settings.bucketMs / 1000;
  return panelSvg<AdaptiveBucket>({
    heading: describeLab(settings),
    columns: [
      { title: 'limit (none: 0)', value: (bucket) => bucket.limit ?? 0, color: COLORS.line },
      { title: 'in flight upstream', value: (bucket) => bucket.inFlight, color: COLORS.admitted },
      { title: 'p99 latency, ms', value: (bucket) => bucket.p99Ms ?? 0, color: COLORS.limit },
      { title: 'shed per second', value: (bucket) => bucket.shed / seconds, color: COLORS.rejected },
    ],
    rows: runs.map((run) => ({ title: CONTROLLER_TITLES[run.controller], samples: run.buckets })),
    durationMs: settings.durationMs,
    atMs: (bucket) => bucket.atMs,
    marks: settings.changes.map((change) => change.atMs),
  });
}
