/**
 * HTTP end to end: Fastify and Express hello-world servers without a limiter, with the peer's
 * limiter on Redis, and with Floodgate on Redis, loaded by autocannon over loopback. Each server
 * runs in a child process (bench/support/http-server.ts); autocannon runs here. The Floodgate
 * variants are skipped, not failed, while their adapter module does not exist.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { BenchContext } from '../support/context.js';
import { HTTP_VARIANTS, type HttpVariant, type Started } from '../support/http-server.js';

interface AutocannonResult {
  requests: { total: number };
  latency: { p50: number; p99: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  pipelining?: number;
}) => Promise<AutocannonResult>;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
const SERVER = fileURLToPath(new URL('../support/http-server.ts', import.meta.url));

export interface HttpRun {
  variant: HttpVariant;
  framework: 'fastify' | 'express';
  /** undefined when skipped. */
  result?: { requestsPerSecond: number; p50Ms: number; p99Ms: number; failed: number };
  /**
   * Requests/s of each round, in round order: round i of two variants ran back to back, so
   * their ratio is the least disturbed by load that comes and goes on a shared machine.
   */
  rounds?: number[];
  skipped?: string;
}

async function startServers(redisPort: number): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVER, String(redisPort)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const end = output.indexOf('\n');
      if (end >= 0) resolve(output.slice(0, end));
    });
    child.once('exit', (code) => reject(new Error(`the http servers exited with ${code}`)));
  });
  return { child, line };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

interface Measured {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
}

/**
 * Every variant is measured `httpRounds` times, the rounds interleaved (forward, then backward,
 * ...) so that a burst of load from elsewhere on the machine falls on several variants rather
 * than on one; each variant reports its median round (by requests/s).
 */
export async function runHttp(context: BenchContext): Promise<HttpRun[]> {
  const { settings } = context;
  const { child, line } = await startServers(context.server.port);
  const rounds = new Map<HttpVariant, Measured[]>();
  const skipped = new Map<HttpVariant, string>();
  try {
    const servers = JSON.parse(line) as Record<HttpVariant, Started>;
    for (let round = 0; round < settings.httpRounds; round++) {
      const order = round % 2 === 0 ? HTTP_VARIANTS : [...HTTP_VARIANTS].reverse();
      for (const variant of order) {
        const started = servers[variant];
        if (started.port === undefined) {
          if (round === 0) context.log(`http ${variant.padEnd(30)} skipped: ${started.skipped}`);
          skipped.set(variant, started.skipped);
          continue;
        }
        await context.admin.flushall();
        const url = `http://127.0.0.1:${started.port}/`;
        if (round === 0) {
          await autocannon({
            url,
            connections: settings.httpConnections,
            duration: settings.quick ? 0.4 : 1,
          });
        }
        const result = await autocannon({
          url,
          connections: settings.httpConnections,
          duration: settings.httpSeconds,
        });
        const measured: Measured = {
          requestsPerSecond: result.requests.total / result.duration,
          p50Ms: result.latency.p50,
          p99Ms: result.latency.p99,
          failed: result.non2xx + result.errors + result.timeouts,
        };
        context.log(
          `http ${variant.padEnd(30)} round ${round + 1} ${Math.round(measured.requestsPerSecond)
            .toLocaleString('en-US')
            .padStart(8)} req/s  p99 ${measured.p99Ms} ms  failed ${measured.failed}`,
        );
        rounds.set(variant, [...(rounds.get(variant) ?? []), measured]);
      }
    }
  } finally {
    await stopServer(child);
  }
  return HTTP_VARIANTS.map((variant): HttpRun => {
    const framework = variant.startsWith('fastify') ? 'fastify' : 'express';
    const inOrder = rounds.get(variant) ?? [];
    const measured = [...inOrder].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
    const median = measured[Math.floor((measured.length - 1) / 2)];
    if (median === undefined) return { variant, framework, skipped: skipped.get(variant) ?? 'not measured' };
    // Failures count over every round: one failed request anywhere is worth seeing.
    const failed = measured.reduce((sum, run) => sum + run.failed, 0);
    return {
      variant,
      framework,
      result: { ...median, failed },
      rounds: inOrder.map((run) => run.requestsPerSecond),
    };
  });
}
