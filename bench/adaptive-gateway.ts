/**
 * `floodgate serve` in front of a real upstream that slows down past its capacity
 * (test/support/congested-upstream.ts), with and without `--adaptive`, offered open-loop Poisson
 * traffic (10% critical, 60% standard, 30% sheddable by the x-priority header): unloaded (0.3× the
 * capacity) and overloaded (3×). Reports, per run, p50 and p99 latency of the requests answered
 * 200, goodput (those per second over what the capacity serves) and the share of critical
 * requests served. Run: `npx tsx bench/adaptive-gateway.ts [--seconds 15]`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../src/cli/compare/scenarios.js';
import { startCongestedUpstream } from '../test/support/congested-upstream.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CAPACITY = 8;
const LATENCY_MS = 50;
const CLIENT_TIMEOUT_MS = 2_000;
const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 15;
const MIX = [
  ['critical', 0.1],
  ['standard', 0.6],
  ['sheddable', 0.3],
] as const;

/** The criticality a draw in [0, 1) falls on, by MIX's shares. */
function pickPriority(draw: number): string {
  let left = draw;
  for (const [priority, share] of MIX) {
    left -= share;
    if (left < 0) return priority;
  }
  return 'standard';
}

interface Run {
  name: string;
  adaptive: boolean;
  offered: number;
}

const RUNS: Run[] = [
  { name: 'unloaded, off', adaptive: false, offered: 0.3 },
  { name: 'unloaded, --adaptive', adaptive: true, offered: 0.3 },
  { name: '3x capacity, off', adaptive: false, offered: 3 },
  { name: '3x capacity, --adaptive', adaptive: true, offered: 3 },
];

async function startGateway(
  upstream: string,
  adaptive: boolean,
  dir: string,
): Promise<{ url: string; child: ChildProcess }> {
  const config = join(dir, `${adaptive ? 'on' : 'off'}.json`);
  await writeFile(
    config,
    JSON.stringify({
      upstream,
      rules: [{ limit: '10000000/1m' }],
      clientConcurrency: 100_000,
      ...(adaptive ? { adaptive: { initial: CAPACITY * 2 }, priorityHeader: 'x-priority' } : {}),
    }),
  );
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', '0', '--admin-port', '0', '--config', config],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, REDIS_URL: '' } },
  );
  // The listening line names the URL; the request lines after it are read and dropped (a full pipe would stall the gateway).
  const url = await new Promise<string>((resolve, reject) => {
    let buffer: string | undefined = '';
    child.stdout?.on('data', (chunk) => {
      if (buffer === undefined) return;
      buffer += chunk;
      const match = /"url":"(http:[^"]+)"/.exec(buffer);
      if (match?.[1]) {
        buffer = undefined;
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}`)));
  });
  return { url, child };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number);
}

async function offer(url: string, offered: number) {
  const random = mulberry32(7);
  const ratePerMs = (offered * CAPACITY) / LATENCY_MS;
  const served: number[] = [];
  const critical = { sent: 0, ok: 0 };
  let other = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now();
  let next = start;
  while (next - start < SECONDS * 1000) {
    next += -Math.log(1 - random()) / ratePerMs;
    const wait = next - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const priority = pickPriority(random());
    if (priority === 'critical') critical.sent++;
    const sentAt = performance.now();
    pending.push(
      fetch(`${url}/work`, {
        headers: { 'x-priority': priority },
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      })
        .then(async (response) => {
          await response.arrayBuffer();
          if (response.status !== 200) return;
          served.push(performance.now() - sentAt);
          if (priority === 'critical') critical.ok++;
        })
        .catch(() => {
          other++;
        }),
    );
  }
  await Promise.all(pending);
  served.sort((a, b) => a - b);
  return {
    p50: percentile(served, 0.5),
    p99: percentile(served, 0.99),
    goodput: served.length / SECONDS / ((CAPACITY / LATENCY_MS) * 1000),
    critical: critical.sent === 0 ? Number.NaN : critical.ok / critical.sent,
    timedOut: other,
  };
}

const dir = await mkdtemp(join(tmpdir(), 'floodgate-adaptive-bench-'));
const upstream = await startCongestedUpstream({ capacity: CAPACITY, latencyMs: LATENCY_MS });
console.log(
  `upstream: capacity ${CAPACITY}, ${LATENCY_MS} ms each up to it (${(CAPACITY / LATENCY_MS) * 1000} req/s); ${SECONDS} s per run, open-loop Poisson, client timeout ${CLIENT_TIMEOUT_MS} ms`,
);
console.log('run                      p50 ms   p99 ms  goodput  critical served  client timeouts');
try {
  for (const run of RUNS) {
    const gateway = await startGateway(upstream.url, run.adaptive, dir);
    try {
      const result = await offer(gateway.url, run.offered);
      console.log(
        `${run.name.padEnd(23)} ${result.p50.toFixed(1).padStart(7)} ${result.p99.toFixed(1).padStart(8)} ${`${(result.goodput * 100).toFixed(1)}%`.padStart(8)} ${`${(result.critical * 100).toFixed(1)}%`.padStart(16)} ${String(result.timedOut).padStart(16)}`,
      );
    } finally {
      gateway.child.kill();
    }
    // An overloaded run leaves the upstream a backlog (clients gave up, it did not): the next run starts on an idle upstream.
    while (upstream.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
} finally {
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
}
