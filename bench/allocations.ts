/**
 * Bytes the Node process allocates per check, for builds of Floodgate and the bench's Redis
 * contenders, one process each:
 *   npm run build && cp -r dist/esm /tmp/before     # (change the code) npm run build
 *   node --import tsx bench/allocations.ts [options] /tmp/before dist/esm rlf EVALSHA
 * Names as for bench/instructions.ts (a build directory, or the `short` of a Redis contender).
 * Options: --algorithm=NAME (default fixed-window), --in-flight=N (default 1), --keys=N (default
 * 10,000), --warmup=N checks before sampling (default 30,000), --checks=N sampled (default
 * 40,000), --top=N allocating functions listed per name (default 0).
 *
 * Why: what a check allocates is garbage the scavenger and the memory bus pay for, which
 * instruction counts miss and timings on this shared machine cannot resolve. V8's sampling heap
 * profiler (one sample per 128 bytes on average) records objects the collector has already freed
 * too (`includeObjectsCollectedByMinorGC` / `MajorGC`), so the total is every byte allocated
 * while sampling, within ~1%; `--top` shows where, by the allocating function and its two callers.
 */
import { execFileSync } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { AlgorithmName } from '../src/index.js';
import { userKeys } from './support/context.js';
import { drive, loneCheck, loneCheckOptions } from './support/lone-check.js';
import { startBenchRedis } from './support/redis.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { ...loneCheckOptions(40000), top: { type: 'string', default: '0' } },
});

function count(name: keyof typeof values, least: number): number {
  const number = Number(values[name]);
  if (!Number.isSafeInteger(number) || number < least) {
    throw new RangeError(`--${name}: expected an integer of at least ${least}, got '${values[name]}'`);
  }
  return number;
}

const inFlight = count('in-flight', 1);
const warmup = count('warmup', 1);
const checks = count('checks', 1);
const top = count('top', 0);
const keys = userKeys(count('keys', 1));

/** A node of V8's sampling heap profile. */
interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Bytes per check in all, and per allocating function with its two callers, largest first. */
function perCheck(head: ProfileNode): { total: number; sites: [string, number][] } {
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode, stack: readonly string[]): void => {
    const { functionName, url, lineNumber } = node.callFrame;
    const frame = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`;
    const here = [...stack.slice(-2), frame];
    if (node.selfSize > 0) {
      total += node.selfSize;
      const site = here.join(' < ');
      sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here);
  };
  walk(head, []);
  return {
    total: total / checks,
    sites: [...sites]
      .map(([site, bytes]): [string, number] => [site, bytes / checks])
      .sort((a, b) => b[1] - a[1]),
  };
}

/** The measuring process: warms up, samples `checks` checks, prints its result as one JSON line. */
async function worker(name: string, port: number): Promise<void> {
  const { check, client } = await loneCheck(name, port, values.algorithm as AlgorithmName);
  await drive(check, keys, warmup, inFlight);
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 128,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await drive(check, keys, checks, inFlight);
  const { profile } = await session.post('HeapProfiler.stopSampling');
  session.disconnect();
  client.disconnect();
  process.stdout.write(`${JSON.stringify(perCheck(profile.head as ProfileNode))}\n`);
}

function measured(name: string, port: number): { total: number; sites: [string, number][] } {
  const output = execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      ...process.argv.slice(2).filter((arg) => arg.startsWith('--')),
      `--worker=${name}`,
      `--redis-port=${port}`,
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(output.trim().split('\n').at(-1) as string);
}

async function main(): Promise<void> {
  if (positionals.length === 0) {
    throw new TypeError(
      'bench/allocations.ts: give build directories and/or contender names (e.g. dist/esm rlf EVALSHA)',
    );
  }
  const server = await startBenchRedis();
  try {
    console.log(
      `${values.algorithm} for builds, ${keys.length} keys, ${inFlight} in flight; bytes allocated per check over ${checks} checks after ${warmup}`,
    );
    let first: number | undefined;
    for (const name of positionals) {
      const { total, sites } = measured(name, server.port);
      first ??= total;
      console.log(
        `${name.padEnd(30)} ${Math.round(total).toLocaleString('en-US').padStart(8)} ×${(total / first).toFixed(3)}`,
      );
      for (const [site, bytes] of sites.slice(0, top))
        console.log(`  ${Math.round(bytes).toString().padStart(6)}  ${site}`);
    }
  } finally {
    await server.stop();
  }
}

if (values.worker !== undefined) await worker(values.worker, Number(values['redis-port']));
else await main();
