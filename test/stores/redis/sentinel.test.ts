/**
 * Floodgate on a Sentinel-managed Redis, with the ioredis client exactly as docs/failure.md
 * advises, through two real failovers: a primary frozen with SIGSTOP, then the new primary killed
 * with SIGKILL. After each promotion checks reach the new primary; counts the old one had
 * replicated are all there (a key's remaining quota, and a denial); checks meanwhile fail fast.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Limiter, redisStore } from '../../../src/index.js';
import { extractSnippets } from '../../docs/snippets.js';
import { nodeCommand, parseInfo } from '../../support/redis-cluster.js';
import { type SentinelGroup, startSentinelGroup } from '../../support/redis-sentinel.js';

let group: SentinelGroup;
let client: Redis;

/** The client as docs/failure.md#redis-sentinel advises (the last test holds the two together). */
function sentinelClient(sentinels: SentinelGroup['sentinels'], name: string): Redis {
  return new Redis({
    sentinels,
    name,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    failoverDetector: true,
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  });
}

beforeAll(async () => {
  group = await startSentinelGroup();
  client = sentinelClient(group.sentinels, group.name);
  // The failovers make connection errors on purpose; Floodgate reports them through its own events.
  client.on('error', () => {});
});

afterAll(async () => {
  client?.disconnect();
  await group?.stop();
});

const LIMIT = 10;
/** A check still unsettled this long after it was made counts as hung (a liveness bound only). */
const HUNG_MS = 5000;
/** The failover and the client's reconnection take a few seconds with these sentinels. */
const RESUME_MS = 15_000;

function sentinelLimiter(prefix: string): { limiter: Limiter; events: string[] } {
  const limiter = createLimiter({
    store: redisStore({ client }),
    prefix,
    rules: { name: 'log', algorithm: 'sliding-log', limit: LIMIT, window: '1h' },
    // Generous for a shared machine before the fault; a frozen primary is answered after it.
    timeout: '1s',
    // Every check asks Redis, so a denial after the failover is the new primary's.
    denyCache: false,
  });
  const events: string[] = [];
  limiter.on('degraded', ({ reason }) => events.push(`degraded:${reason}`));
  limiter.on('recovered', () => events.push('recovered'));
  return { limiter, events };
}

/**
 * Uses `partly` for `before` admissions and `spent` up to a denial on the current primary, lets
 * the replica have them, runs `fault`, then checks `partly` until the store answers again.
 * Resolves what callers saw meanwhile and the store's admissions of `partly` after the failover.
 */
async function failOver(limiter: Limiter, before: number, fault: () => Promise<void>, primary: number) {
  for (let i = 0; i < before; i++)
    expect(await limiter.check('partly')).toMatchObject({ allowed: true, degraded: false });
  for (let i = 0; i < LIMIT; i++) expect((await limiter.check('spent')).allowed).toBe(true);
  expect(await limiter.check('spent')).toMatchObject({ allowed: false, degraded: false });
  // Replication is asynchronous: what the primary had not sent its replica would be lost with it.
  await group.waitReady(primary);
  await fault();
  const meanwhile: string[] = [];
  const resumeBy = Date.now() + RESUME_MS;
  for (;;) {
    if (Date.now() > resumeBy)
      throw new Error(`no answer from the store within ${RESUME_MS} ms of the fault`);
    const decision = await Promise.race([
      limiter.check('partly'),
      sleep(HUNG_MS).then(() => 'hung' as const),
    ]);
    if (decision === 'hung') throw new Error(`a check hung (after ${meanwhile.join(', ')})`);
    if (decision.degraded === false) {
      expect(decision.allowed).toBe(true);
      break;
    }
    meanwhile.push(decision.degraded);
    await sleep(20);
  }
  let admitted = 1;
  while ((await limiter.check('partly')).allowed) admitted++;
  // What callers saw, each kind once, in the order they first saw it.
  return { meanwhile: [...new Set(meanwhile)], admitted };
}

async function role(port: number): Promise<Record<string, string>> {
  return parseInfo(await nodeCommand(port, 'INFO', 'replication'));
}

describe('Redis Sentinel failover (three sentinels, ioredis as docs/failure.md advises)', () => {
  it('a frozen primary (SIGSTOP): checks time out, then reach the promoted replica with every count', async () => {
    const { limiter, events } = sentinelLimiter('frozen');
    const old = group.primary;
    const { meanwhile, admitted } = await failOver(
      limiter,
      4,
      async () => {
        old.process.kill('SIGSTOP');
      },
      old.port,
    );
    await group.waitPrimary(group.replicas[0].port);
    expect((await role(group.replicas[0].port)).role).toBe('master');
    // The frozen primary's connection stayed open: the deadline answered (and the breaker, once
    // open); once the sentinels announced the new primary the client left it (errors while it
    // reconnected).
    expect(meanwhile[0]).toBe('timeout');
    expect(meanwhile.filter((reason) => !['timeout', 'unavailable', 'error'].includes(reason))).toEqual([]);
    // Four admissions before, six after: the limit, exactly.
    expect(admitted).toBe(LIMIT - 4);
    expect(await limiter.peek('spent')).toMatchObject({ allowed: false, degraded: false });
    expect(events).toEqual(['degraded:timeout', 'recovered']);
  });

  it('a killed primary (SIGKILL): checks fail at once, then reach the promoted replica with every count', async () => {
    const { limiter, events } = sentinelLimiter('killed');
    const doomed = group.replicas[0];
    const { meanwhile, admitted } = await failOver(
      limiter,
      3,
      async () => {
        doomed.process.kill('SIGKILL');
      },
      doomed.port,
    );
    await group.waitPrimary(group.replicas[1].port);
    expect((await role(group.replicas[1].port)).role).toBe('master');
    // A closed connection and no offline queue: every check fails at once, then the breaker answers.
    expect(meanwhile[0]).toBe('error');
    expect(meanwhile.filter((reason) => !['unavailable', 'error'].includes(reason))).toEqual([]);
    expect(admitted).toBe(LIMIT - 3);
    expect(await limiter.peek('spent')).toMatchObject({ allowed: false, degraded: false });
    expect(events).toEqual(['degraded:error', 'recovered']);
  });

  it('docs/failure.md advises exactly the client options used here', () => {
    const optionsIn = (source: string) => {
      const block = source.slice(
        source.indexOf('new Redis({'),
        source.indexOf('});', source.indexOf('new Redis({')),
      );
      return [...block.matchAll(/^\s+(\w+)(?:: (.+?))?,?$/gm)].map(([, name, value]) =>
        name === 'sentinels' || name === 'name' ? name : `${name}: ${value}`,
      );
    };
    const docs = extractSnippets('docs/failure.md', readFileSync('docs/failure.md', 'utf8'));
    const advice = docs.find((snippet) => snippet.source.includes('sentinels:'));
    expect(advice).toBeDefined();
    expect(optionsIn(advice?.source ?? '')).toEqual(
      optionsIn(readFileSync(new URL(import.meta.url).pathname, 'utf8')),
    );
  });
});
