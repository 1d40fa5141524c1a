/** `floodgate compare --adaptive`: its options, the lab's runs, the table, JSON or a chart. */
import { writeFile } from 'node:fs/promises';
import { extname } from 'node:path';
import {
  durationOption,
  integerOption,
  parseCommandArgs,
  RuntimeFailure,
  stringOption,
  UsageError,
} from '../args.js';
import { ADAPTIVE_CONTROLLERS, type AdaptiveLabSettings, runAdaptiveLab } from './adaptive-lab.js';
import { adaptiveSvg, adaptiveText } from './adaptive-report.js';
import { htmlPage } from './chart.js';

export const ADAPTIVE_HELP = `Usage: floodgate compare --adaptive [options]

Simulates an upstream whose latency grows with its concurrency past its capacity, offered more
than it can take, with and without the adaptive limit (docs/adaptive.md), on the same arrivals:
10% critical, 60% standard, 30% sheddable. Its capacity halves a third of the way through and
comes back at two thirds. Prints what each served and shed, p99 latency and goodput.

Options:
  --capacity N        requests the upstream serves at once at its no-load latency (default 40)
  --latency DURATION  its no-load latency (default 20ms)
  --offered X         offered load as a multiple of its capacity, 0.1 to 20 (default 3)
  --duration DURATION simulated run (default 60s; runs in about a second)
  --steady            keep the capacity as it is for the whole run
  --seed N            seed of the arrivals (default 1)
  --json              print the results as JSON on stdout
  --chart FILE        write the limit, in-flight, p99 and shed over time to FILE (.svg or .html)
  -h, --help          show this help
`;

const OPTIONS = {
  adaptive: { type: 'boolean' },
  capacity: { type: 'string' },
  latency: { type: 'string' },
  offered: { type: 'string' },
  duration: { type: 'string' },
  steady: { type: 'boolean' },
  seed: { type: 'string' },
  json: { type: 'boolean' },
  chart: { type: 'string' },
} as const;

function offeredOption(value: string | undefined): number {
  if (value === undefined) return 3;
  const number = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || number < 0.1 || number > 20) {
    throw new UsageError(`--offered: '${value}' must be a number from 0.1 to 20`);
  }
  return number;
}

export function parseAdaptiveLab(argv: readonly string[]): {
  help: boolean;
  settings: AdaptiveLabSettings;
  json: boolean;
  chart: string | undefined;
} {
  const parsed = parseCommandArgs('compare', argv, OPTIONS, 0);
  const capacity = integerOption(stringOption(parsed, 'capacity') ?? '40', '--capacity', 1, 10_000);
  const latencyMs = durationOption(stringOption(parsed, 'latency') ?? '20ms', '--latency');
  const durationMs = durationOption(stringOption(parsed, 'duration') ?? '60s', '--duration');
  if (durationMs > 600_000) throw new UsageError('--duration: at most 10m');
  const chart = stringOption(parsed, 'chart');
  if (chart !== undefined && !['.svg', '.html', '.htm'].includes(extname(chart).toLowerCase())) {
    throw new UsageError(`--chart: '${chart}' must end in .svg or .html`);
  }
  const changes =
    parsed.values.steady === true
      ? []
      : [
          { atMs: Math.round(durationMs / 3), capacity: Math.max(1, Math.round(capacity / 2)) },
          { atMs: Math.round((2 * durationMs) / 3), capacity },
        ];
  return {
    help: parsed.values.help === true,
    settings: {
      durationMs,
      capacity,
      latencyMs,
      offered: offeredOption(stringOption(parsed, 'offered')),
      changes,
      mix: { critical: 0.1, standard: 0.6, sheddable: 0.3 },
      // Clients wait 50 no-load latencies, then give up.
      timeoutMs: latencyMs * 50,
      seed: integerOption(stringOption(parsed, 'seed') ?? '1', '--seed', 0, 2 ** 32 - 1),
      bucketMs: Math.max(100, Math.round(durationMs / 120)),
    },
    json: parsed.values.json === true,
    chart,
  };
}

export async function compareAdaptive(argv: readonly string[]): Promise<number> {
  const { help, settings, json, chart } = parseAdaptiveLab(argv);
  if (help) {
    process.stdout.write(ADAPTIVE_HELP);
    return 0;
  }
  const unloaded = runAdaptiveLab({ ...settings, offered: 0.3, changes: [] }, 'none');
  const runs = ADAPTIVE_CONTROLLERS.map((controller) => runAdaptiveLab(settings, controller));
  const text = adaptiveText(settings, runs, unloaded.p99Ms);
  process.stdout.write(
    json ? `${JSON.stringify({ ...settings, unloadedP99Ms: unloaded.p99Ms, runs })}\n` : text,
  );
  if (chart !== undefined) {
    const svg = adaptiveSvg(settings, runs);
    try {
      await writeFile(chart, chart.toLowerCase().endsWith('.svg') ? svg : htmlPage(svg, text));
    } catch (error) {
      throw new RuntimeFailure(`--chart: cannot write ${chart}: ${(error as Error).message}`);
    }
    if (!json) process.stdout.write(`\nChart written to ${chart}\n`);
  }
  return 0;
}
