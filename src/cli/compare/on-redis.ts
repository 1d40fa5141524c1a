/**
 * `floodgate compare --redis URL`: replays a scenario through the real Lua script on a real
 * Redis (given the same simulated times) and measures what the table cannot compute offline:
 * `MEMORY USAGE` per client key, and the commands each decision costs (`INFO commandstats`).
 * Everything it writes lives under a unique prefix and is deleted afterwards.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createLimiter, redisStore } from '../../index.js';
import { ALGORITHMS, keyHead, scriptFor } from '../../internal.js';
import type { Scenario } from './scenarios.js';
import { type RuleParams, runScenario } from './simulate.js';

export interface RedisMeasurement {
  /** Average bytes (MEMORY USAGE, all samples) of one client's keys at the end of the scenario; null if none was left. */
  memoryPerKeyBytes: number | null;
  /** Script calls (FCALL, EVALSHA, EVAL) per decision: at most 1, less when checks share a batch. */
  callsPerDecision: number;
  /** Commands the script ran per decision (GET, SET, ZADD...), on average. */
  commandsPerDecision: number;
  /** Decisions that differ from the memory store's on the same traffic (0 unless a twin drifted). */
  mismatches: number;
}

/**
 * Clients replayed on Redis. Algorithms keep state per client, so one client's decisions do not
 * depend on the others': replaying a sample gives the same decisions in far less time.
 */
const CLIENT_SAMPLE = 20;

const SCRIPT_CALLS = new Set(['fcall', 'evalsha', 'eval']);
/** Commands of the measurement itself, or of the store's one-time set-up, not of the decisions. */
const SETUP_COMMANDS = new Set(['info', 'script|load', 'function|load', 'config|get']);

export async function measureOnRedis(
  client: Redis,
  scenario: Scenario,
  rule: RuleParams,
  expected: Uint8Array,
  options: { start: number; onProgress?: (done: number, total: number) => void },
): Promise<RedisMeasurement> {
  // As long as the default 'floodgate' prefix, so MEMORY USAGE sees realistic key names.
  const prefix = `fgcmp${randomBytes(2).toString('hex')}`;
  const { sample, expectedInSample } = sampleClients(scenario, expected);
  // Loaded first, so no reload (missing function, NOSCRIPT) is counted as a call. A server
  // without functions (Redis 6) refuses FUNCTION LOAD; the store then goes by EVALSHA.
  const script = scriptFor([ALGORITHMS[rule.algorithm].code]);
  await client.call('FUNCTION', 'LOAD', 'REPLACE', script.library).catch(() => undefined);
  await client.script('LOAD', script.text);
  const before = await commandStats(client);
  const allowed = await runScenario(sample, rule, (clock) => redisStore({ client, clock }), {
    start: options.start,
    prefix,
    onProgress: (done) => options.onProgress?.(done, sample.times.length),
  });
  const after = await commandStats(client);

  let mismatches = 0;
  for (let i = 0; i < allowed.length; i++) if (allowed[i] !== expectedInSample[i]) mismatches++;

  const suffixes = ALGORITHMS[rule.algorithm].keySuffixes;
  let bytes = 0;
  let present = 0;
  for (const keyName of sample.keyNames) {
    const base = `${keyHead(prefix, keyName)}:compare:${ALGORITHMS[rule.algorithm].tag}`;
    let keyBytes = 0;
    for (const suffix of suffixes) {
      const usage = await client.call('MEMORY', 'USAGE', base + suffix, 'SAMPLES', '0');
      if (typeof usage === 'number') keyBytes += usage;
    }
    if (keyBytes > 0) {
      bytes += keyBytes;
      present++;
    }
  }

  // Clean up: the same script's reset mode deletes every key of each client.
  const cleanup = createLimiter({
    store: redisStore({ client }),
    prefix,
    rules: { name: 'compare', algorithm: rule.algorithm, limit: rule.limit, window: rule.windowMs },
  });
  await Promise.all(sample.keyNames.map((keyName) => cleanup.reset(keyName)));

  const decisions = Math.max(1, allowed.length);
  let scriptCalls = 0;
  let innerCommands = 0;
  for (const [command, calls] of after) {
    const delta = calls - (before.get(command) ?? 0);
    if (SCRIPT_CALLS.has(command)) scriptCalls += delta;
    else if (!SETUP_COMMANDS.has(command)) innerCommands += delta;
  }
  return {
    memoryPerKeyBytes: present === 0 ? null : Math.round(bytes / present),
    callsPerDecision: scriptCalls / decisions,
    commandsPerDecision: innerCommands / decisions,
    mismatches,
  };
}

/** The scenario restricted to its first CLIENT_SAMPLE clients, and the decisions expected for them. */
function sampleClients(scenario: Scenario, expected: Uint8Array) {
  if (scenario.keyNames.length <= CLIENT_SAMPLE) return { sample: scenario, expectedInSample: expected };
  const picked: number[] = [];
  for (let i = 0; i < scenario.keys.length; i++)
    if ((scenario.keys[i] as number) < CLIENT_SAMPLE) picked.push(i);
  const sample: Scenario = {
    ...scenario,
    keyNames: scenario.keyNames.slice(0, CLIENT_SAMPLE),
    times: Float64Array.from(picked, (i) => scenario.times[i] as number),
    keys: Uint32Array.from(picked, (i) => scenario.keys[i] as number),
  };
  return { sample, expectedInSample: Uint8Array.from(picked, (i) => expected[i] as number) };
}

/** Calls per command from INFO commandstats. */
async function commandStats(client: Redis): Promise<Map<string, number>> {
  const info = await client.info('commandstats');
  const stats = new Map<string, number>();
  for (const line of info.split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match) stats.set((match[1] as string).toLowerCase(), Number(match[2]));
  }
  return stats;
}
