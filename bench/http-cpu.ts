/**
 * Server CPU per HTTP request, Express variants (with and without an adaptive limit that sheds
 * nothing), several Floodgate builds side by side:
 *   npm run build && cp -r dist/esm /tmp/before   # the build to compare against
 *   (change the code) npm run build
 *   node --import tsx bench/http-cpu.ts [--rounds=N] [--seconds=S] /tmp/before dist/esm
 * Each build's adapters are served by a bench/support/http-server.ts child of their own (its
 * BENCH_HTTP_ADAPTERS); the plain express and express-rate-limit servers of the first child
 * are measured too. autocannon loads one server at a time, in turns (forward, then backward
 * order); a server's CPU (user + system, all threads, from /proc) over the run ÷ requests is
 * its cost per request, which moves far less than requests/s on a shared machine.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Started } from './support/http-server.js';
import { connect, startBenchRedis } from './support/redis.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    // Pins every server to this CPU (taskset), so the builds compared run on the same core.
    'server-cpu': { type: 'string' },
  },
});

type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
}) => Promise<{ requests: { total: number }; duration: number; non2xx: number; errors: number }>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
const SERVER = fileURLToPath(new URL('support/http-server.ts', import.meta.url));
const TICK_US = 1e6 / 100;

/** User + system CPU of a process, all its threads, in µs (clock ticks of 10 ms). */
function cpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

interface Target {
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  readonly cpu: number[];
  readonly rate: number[];
}

async function startServers(
  adapters: string,
  redisPort: number,
): Promise<{ child: ChildProcess; ports: Record<string, Started> }> {
  const command = [process.execPath, '--import', 'tsx', SERVER, String(redisPort)];
  const pinned =
    values['server-cpu'] === undefined ? command : ['taskset', '-c', values['server-cpu'], ...command];
  const child = spawn(pinned[0] as string, pinned.slice(1), {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BENCH_HTTP_ADAPTERS: `${resolve(adapters, 'http')}/` },
  });
  const [chunk] = (await once(child.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
  return { child, ports: JSON.parse(chunk.toString()) as Record<string, Started> };
}

const median = (numbers: number[]) =>
  [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)] as number;

async function main(): Promise<void> {
  const rounds = Number(values.rounds);
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const server = await startBenchRedis();
  const admin = await connect(server);
  const children: ChildProcess[] = [];
  const targets: Target[] = [];
  const add = (name: string, pid: number, started: Started | undefined) => {
    if (started?.port === undefined) throw new Error(`${name}: not started`);
    targets.push({ name, pid, url: `http://127.0.0.1:${started.port}/`, cpu: [], rate: [] });
  };
  try {
    for (const [index, dir] of positionals.entries()) {
      const { child, ports } = await startServers(dir, server.port);
      children.push(child);
      const pid = child.pid as number;
      if (index === 0) {
        add('express', pid, ports.express);
        add('express+express-rate-limit', pid, ports['express+express-rate-limit']);
      }
      add(`express+floodgate ${dir}`, pid, ports['express+floodgate']);
      // The adaptive limit's cost for a request it lets through (a limit nothing reaches).
      if (ports['express+floodgate+adaptive']?.port !== undefined)
        add(`express+floodgate+adaptive ${dir}`, pid, ports['express+floodgate+adaptive']);
    }
    for (const target of targets) await autocannon({ url: target.url, connections, duration: 1 });
    for (let round = 0; round < rounds; round++) {
      for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
        await admin.flushall();
        const before = cpuUs(target.pid);
        const result = await autocannon({ url: target.url, connections, duration: seconds });
        const used = cpuUs(target.pid) - before;
        if (result.non2xx + result.errors > 0) throw new Error(`${target.name}: failed requests`);
        target.cpu.push(used / result.requests.total);
        target.rate.push(result.requests.total / result.duration);
      }
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
    admin.disconnect();
    await server.stop();
  }
  const base = targets[0] as Target;
  const first = targets[2] as Target;
  console.log(`median of ${rounds} runs of ${seconds} s, ${connections} connections`);
  const paired = (target: Target, other: Target) =>
    median(target.cpu.map((cpu, round) => cpu / (other.cpu[round] as number))).toFixed(3);
  for (const target of targets) {
    const cpu = median(target.cpu);
    console.log(
      `${target.name.padEnd(44)} CPU ${cpu.toFixed(1).padStart(6)} µs/request (+${(cpu - median(base.cpu)).toFixed(1)})  ${Math.round(median(target.rate)).toLocaleString('en-US').padStart(7)} req/s  ×${paired(target, base)} express, ×${paired(target, first)} first build  [${target.cpu.map((each) => each.toFixed(0)).join(' ')}]`,
    );
  }
}

await main();
