/**
 * Instructions the Node process executes per check (valgrind's callgrind), for builds of Floodgate
 * and the bench's Redis contenders, one process each:
 *   npm run build && cp -r dist/esm /tmp/before     # (change the code) npm run build
 *   node --import tsx bench/instructions.ts [options] /tmp/before dist/esm rlf EVALSHA
 * A build directory measures `limiter.check` of a fixed-window rule on it; any other name is the
 * `short` of a Redis contender in bench/peers (rlf, erl+rlr, fastify-rl, EVALSHA, PING, ...).
 * Options: --algorithm=NAME (default fixed-window), --in-flight=N (default 1), --keys=N
 * (default 10,000), --warmup=N checks before counting (default 30,000), --checks=N counted
 * (default 5,000).
 *
 * Why: on this shared machine timed A/B runs of a lone check move by more than most changes; the
 * count of instructions does not (two runs of one build agree within ~0.5%). Valgrind instruments
 * nothing during the warmup (`--instr-atstart=no`), so the JIT has compiled the hot path by the
 * time counting starts, and `--smc-check=all-non-file` follows the code it generates. What it
 * leaves out is the kernel's side of each system call (the same number of calls per check here).
 * The Redis server runs outside valgrind; its own work is counted with callgrind on redis-server
 * (see docs/bench-log.md). Needs `valgrind` on PATH; not part of `npm run bench`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { AlgorithmName } from '../src/index.js';
import { userKeys } from './support/context.js';
import { drive, loneCheck, loneCheckOptions } from './support/lone-check.js';
import { startBenchRedis } from './support/redis.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { ...loneCheckOptions(5000) },
});

function positiveInteger(name: keyof typeof values): number {
  const number = Number(values[name]);
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new RangeError(`--${name}: expected a positive integer, got '${values[name]}'`);
  }
  return number;
}

const inFlight = positiveInteger('in-flight');
const warmup = positiveInteger('warmup');
const checks = positiveInteger('checks');
const keys = userKeys(positiveInteger('keys'));
/** Reads the next line the other side writes. */
function lines(stream: NodeJS.ReadableStream, log = () => ''): () => Promise<string> {
  const iterator = createInterface({ input: stream })[Symbol.asyncIterator]();
  return async () => {
    const { value, done } = await iterator.next();
    if (done) throw new Error(`bench/instructions.ts: the measured process ended early\n${log()}`);
    return value as string;
  };
}

/** The measured process: warms up, says "ready", counts on "go", says "done", ends on "exit". */
async function worker(name: string, port: number): Promise<void> {
  const { check, client } = await loneCheck(name, port, values.algorithm as AlgorithmName);
  const next = lines(process.stdin);
  await drive(check, keys, warmup, inFlight);
  process.stdout.write('ready\n');
  await next();
  await drive(check, keys, checks, inFlight);
  process.stdout.write('done\n');
  await next();
  client.disconnect();
  process.stdin.destroy();
}

/** Instructions per check of one build or contender, in a valgrind process of its own. */
async function measured(name: string, port: number, outDir: string): Promise<{ main: number; all: number }> {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      '--smc-check=all-non-file',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(outDir, 'callgrind.%p')}`,
      process.execPath,
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      ...process.argv.slice(2).filter((arg) => arg.startsWith('--')),
      `--worker=${name}`,
      `--redis-port=${port}`,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stderr.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  const next = lines(child.stdout, () => log);
  const control = (state: 'on' | 'off') =>
    execFileSync('callgrind_control', ['-i', state, String(child.pid)], { stdio: 'ignore' });
  if ((await next()) !== 'ready') throw new Error(`${name}: unexpected output\n${log}`);
  control('on');
  child.stdin.write('go\n');
  if ((await next()) !== 'done') throw new Error(`${name}: unexpected output\n${log}`);
  control('off');
  child.stdin.write('exit\n');
  await once(child, 'exit');
  // One file per thread: the first is the main thread's, the others V8's own (GC, compilers).
  const files = readdirSync(outDir)
    .filter((file) => file.startsWith(`callgrind.${child.pid}-`))
    .sort();
  if (files.length === 0) throw new Error(`${name}: no callgrind output\n${log}`);
  const perThread = files.map((file) => instructionsIn(readFileSync(join(outDir, file), 'utf8')));
  const main = perThread[0] as number;
  return { main: main / checks, all: perThread.reduce((sum, count) => sum + count, 0) / checks };
}

/**
 * The instructions a callgrind output file counts: the sum of its cost lines ("position cost"),
 * leaving out the inclusive cost line that follows each `calls=` line.
 */
function instructionsIn(text: string): number {
  let total = 0;
  let afterCalls = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('calls=')) {
      afterCalls = true;
      continue;
    }
    const cost = /^(?:[+-]?\d+|\*) (\d+)$/.exec(line);
    if (cost !== null && !afterCalls) total += Number(cost[1]);
    afterCalls = false;
  }
  return total;
}

async function main(): Promise<void> {
  if (positionals.length === 0) {
    throw new TypeError(
      'bench/instructions.ts: give build directories and/or contender names (e.g. dist/esm rlf EVALSHA)',
    );
  }
  const server = await startBenchRedis();
  const outDir = mkdtempSync(join(tmpdir(), 'floodgate-instructions-'));
  try {
    console.log(
      `${values.algorithm} for builds, ${keys.length} keys, ${inFlight} in flight; instructions per check over ${checks} checks after ${warmup}`,
    );
    console.log(
      `${'build or contender'.padEnd(30)} ${'main thread'.padStart(16)} ${'all threads'.padStart(16)}`,
    );
    let first: { main: number; all: number } | undefined;
    for (const name of positionals) {
      const count = await measured(name, server.port, outDir);
      first ??= count;
      const cell = (value: number, base: number) =>
        `${Math.round(value).toLocaleString('en-US')} ×${(value / base).toFixed(3)}`.padStart(16);
      console.log(`${name.padEnd(30)} ${cell(count.main, first.main)} ${cell(count.all, first.all)}`);
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
    await server.stop();
  }
}

if (values.worker !== undefined) await worker(values.worker, Number(values['redis-port']));
else await main();
