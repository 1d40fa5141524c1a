/**
 * `npm run bench`: starts a throwaway redis-server, runs Floodgate, its peers and the ceilings on
 * the same work in one run, and writes BENCHMARKS.md. Flags: see support/settings.ts and docs/bench.md.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, type } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type BenchResults, renderReport } from './report.js';
import { runClockSkew } from './scenarios/clock-skew.js';
import { runDecisions } from './scenarios/decisions.js';
import { runHotKey } from './scenarios/hot-key.js';
import { runHttp } from './scenarios/http.js';
import { runMemoryStore } from './scenarios/memory-store.js';
import { runRedisCost } from './scenarios/redis-cost.js';
import { runScheduler } from './scenarios/scheduler.js';
import type { BenchContext } from './support/context.js';
import { connect, redisVersion, startBenchRedis } from './support/redis.js';
import { parseSettings } from './support/settings.js';

const PACKAGES = [
  'ioredis',
  'rate-limiter-flexible',
  'express-rate-limit',
  'rate-limit-redis',
  '@fastify/rate-limit',
  'fastify',
  'express',
  'autocannon',
  'p-queue',
  'bottleneck',
];

function versionOf(packageJson: URL): string {
  try {
    return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function versions(): Record<string, string> {
  // Read from node_modules directly: some packages' export maps do not expose package.json.
  const found: Record<string, string> = { floodgate: versionOf(new URL('../package.json', import.meta.url)) };
  for (const name of PACKAGES)
    found[name] = versionOf(new URL(`../node_modules/${name}/package.json`, import.meta.url));
  return found;
}

async function main(): Promise<void> {
  const settings = parseSettings(process.argv.slice(2), process.env);
  const started = performance.now();
  const loadBefore = loadavg();
  const log = (message: string) => {
    process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${message}\n`);
  };
  log(
    `bench: ${settings.scenarios.join(', ')}; ${settings.seconds} s per run${settings.quick ? ' (quick)' : ''}`,
  );

  const server = await startBenchRedis();
  const admin = await connect(server);
  const stop = async () => {
    admin.disconnect();
    await server.stop();
  };
  const interrupted = () => {
    void stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  try {
    const context: BenchContext = { server, admin, settings, log };
    const redis = await redisVersion(admin);
    const results: Omit<BenchResults, 'meta'> = {};
    for (const scenario of settings.scenarios) {
      log(`— ${scenario}`);
      if (scenario === 'decisions') results.decisions = await runDecisions(context);
      if (scenario === 'redis-cost') results.redisCost = await runRedisCost(context);
      if (scenario === 'memory-store') results.memory = await runMemoryStore(context);
      if (scenario === 'http') results.http = await runHttp(context);
      if (scenario === 'clock-skew') results.clockSkew = await runClockSkew(context);
      if (scenario === 'hot-key') results.hotKey = await runHotKey(context);
      if (scenario === 'scheduler') results.scheduler = await runScheduler(context);
    }
    const report = renderReport({
      ...results,
      meta: {
        command: settings.command,
        date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
        os: `${type()} ${release()}`,
        node: process.version,
        redis,
        versions: versions(),
        loadBefore,
        loadAfter: loadavg(),
        totalSeconds: (performance.now() - started) / 1000,
        settings,
      },
    });
    writeFileSync(settings.out, report);
    log(`wrote ${settings.out}`);
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    await stop();
  }
}

await main();
