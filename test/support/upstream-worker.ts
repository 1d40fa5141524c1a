/**
 * Workers in a process of their own calling a mock upstream through a scheduler on a shared
 * Redis, for test/scheduler/upstream-fleet.test.ts: on a JSON line of stdin it runs `workers`
 * loops of jobs until `untilMs` (epoch ms) and answers once they are done with the longest stall
 * of its event loop (the upstream counts what reached it).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { mulberry32 } from '../../src/cli/compare/scenarios.js';
import { createScheduler, redisStore } from '../../src/index.js';

interface FleetRun {
  prefix: string;
  url: string;
  workers: number;
  untilMs: number;
  /** The scheduler's own rules, per window (looser than the upstream's). */
  requests: number;
  tokens: number;
  windowMs: number;
  seed: number;
  /** Work a job does between its grant and its call, at most (ms, uniform). */
  prepMs: number;
}

const client = new Redis(Number(process.argv[2]), '127.0.0.1');
createInterface({ input: process.stdin }).on('line', async (line) => {
  const run = JSON.parse(line) as FleetRun;
  const scheduler = createScheduler({
    store: redisStore({ client }),
    prefix: run.prefix,
    headers: 'openai',
    rules: [
      {
        name: 'requests',
        algorithm: 'sliding-window',
        limit: run.requests,
        window: run.windowMs,
        counts: 'requests',
      },
      { name: 'tokens', algorithm: 'sliding-window', limit: run.tokens, window: run.windowMs },
    ],
  });
  const random = mulberry32(run.seed);
  // How long this process's event loop stalled: a machine too loaded to call can use no budget.
  const stalls = monitorEventLoopDelay({ resolution: 10 });
  stalls.enable();
  await Promise.all(
    Array.from({ length: run.workers }, async () => {
      while (Date.now() < run.untilMs) {
        // An estimate reserved up front, settled with what the upstream reports used.
        const used = 200 + Math.floor(random() * 1600);
        await scheduler.schedule(
          async (grant) => {
            if (run.prepMs > 0) await new Promise((resolve) => setTimeout(resolve, random() * run.prepMs));
            const response = await fetch(run.url, { method: 'POST', body: JSON.stringify({ tokens: used }) });
            grant.observe(response);
            await response.arrayBuffer();
            if (response.status === 200) await grant.settle(used);
          },
          { key: 'upstream', cost: Math.ceil(used * 1.5) },
        );
      }
    }),
  );
  await scheduler.close();
  stalls.disable();
  process.stdout.write(`${JSON.stringify({ stallMs: stalls.max / 1e6 })}\n`);
});
process.stdin.on('end', () => client.disconnect());
process.stdout.write('ready\n');
