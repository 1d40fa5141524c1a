/**
 * Floodgate while a real Redis Cluster changes shape under load: a live key's slot moved to
 * another master (MOVED, ASK and TRYAGAIN on the way), and a master killed with SIGKILL (its
 * replica promoted, the old master later restarted as a replica). Decisions stay exact.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyHead } from '../../src/base/key-encoding.js';
import { createLimiter, type Decision, type Limiter, type RuleOptions, type Store } from '../../src/index.js';
import {
  keySlot,
  nodeCommand,
  nodeStats,
  type RedisCluster,
  startRedisCluster,
  waitReplicated,
} from '../support/redis-cluster.js';
import { type ClusterClients, connectClients, IOREDIS_COMMAND_TIMEOUT_MS } from './clients.js';

let cluster: RedisCluster;
let clients: ClusterClients;

beforeAll(async () => {
  cluster = await startRedisCluster();
  clients = await connectClients(cluster);
});

afterAll(async () => {
  await clients?.close();
  await cluster?.stop();
});

/** A check that settles neither way within this long counts as hung (a liveness bound only). */
const HUNG_MS = IOREDIS_COMMAND_TIMEOUT_MS + 2000;
// Resharding is about MOVED/ASK/TRYAGAIN, not deadlines: a slow shared machine must not fail open.
const RESHARD_TIMEOUT = '5s';

function storeOf(name: string): Store {
  const entry = clients.stores.find((candidate) => candidate.name === name);
  if (entry === undefined) throw new Error(`no store ${name}`);
  return entry.store;
}

/** A key of `limiter` whose slot `pick` accepts, e.g. one served by a given master. */
function findKey(limiter: Limiter, name: string, pick: (slot: number) => boolean): string {
  for (let i = 0; ; i++) {
    const key = `${name}-${i}`;
    if (pick(keySlot(keyHead(limiter.prefix, key)))) return key;
  }
}

async function errorCounts(masters: readonly number[], codes: readonly string[]) {
  const stats = await Promise.all(masters.map((port) => nodeStats(port, 'errorstats')));
  return Object.fromEntries(
    codes.map((code) => [
      code,
      stats.reduce((sum, node) => sum + (node[`errorstat_${code}`]?.count ?? 0), 0),
    ]),
  );
}

/** Checks `key` over and over until stopped, tallying what callers would see. */
/** Allowed by the store itself, not by the onStoreError policy answering for a failed store. */
function admittedByStore(decision: Decision): boolean {
  return decision.allowed && decision.degraded === false;
}

function load(limiter: Limiter, key: string, pauseMs: number) {
  const tally = { attempts: 0, allowed: 0, errors: [] as unknown[] };
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      tally.attempts++;
      try {
        const decision = await limiter.check(key);
        // A degraded decision is the onStoreError policy answering for a store that failed.
        if (decision.degraded !== false) tally.errors.push(new Error(`degraded: ${decision.degraded}`));
        else if (decision.allowed) tally.allowed++;
      } catch (error) {
        tally.errors.push(error);
      }
      await sleep(pauseMs);
    }
  })();
  return {
    tally,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string | (() => string),
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    }
    await sleep(10);
  }
}

describe('resharding under load', () => {
  it('moving a live key between masters: MOVED/ASK/TRYAGAIN are followed, exactly `limit` admitted', async () => {
    const limit = 300;
    // Exact rules with long windows: every admission stays counted for the whole test.
    const rules: RuleOptions[] = [
      { name: 'log', algorithm: 'sliding-log', limit, window: '1h' },
      { name: 'bucket', algorithm: 'token-bucket', limit, window: '1d' },
    ];
    const limiters = clients.stores.map(({ store }) =>
      createLimiter({ rules, store, prefix: 'reshard', timeout: RESHARD_TIMEOUT }),
    );
    const [first] = limiters as [Limiter];
    const key = 'moving-key';
    const slot = keySlot(keyHead(first.prefix, key));
    const masters = await cluster.masters();
    const source = await cluster.masterOf(slot);
    const target = masters.find((port) => port !== source) as number;
    const [sourceId, targetId] = await Promise.all(
      [source, target].map((port) => nodeCommand(port, 'CLUSTER', 'MYID')),
    );
    await Promise.all(masters.map((port) => nodeCommand(port, 'CONFIG', 'RESETSTAT')));

    // Two loops per client, all on the one key.
    const loads = limiters.flatMap((limiter) => [load(limiter, key, 2), load(limiter, key, 3)]);
    const attempts = () => loads.reduce((sum, { tally }) => sum + tally.attempts, 0);
    await waitFor(() => attempts() >= 60, 'load to start');

    // The migration, one key at a time (sliding-log's two keys and the bucket), as
    // `redis-cli --cluster reshard` does it, so the key's entries are split for a while.
    await nodeCommand(target, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', String(sourceId));
    await nodeCommand(source, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', String(targetId));
    const entries = (await nodeCommand(source, 'CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
    expect(entries).toHaveLength(3);
    // Hold each in-between state until callers have met it.
    const seen = async (code: string) => ((await errorCounts([source, target], [code]))[code] ?? 0) > 0;
    for (const [index, entry] of entries.entries()) {
      await nodeCommand(source, 'MIGRATE', '127.0.0.1', target, '', 0, 5000, 'KEYS', entry);
      // Split between the nodes: scripts are refused (TRYAGAIN, never run) and retried.
      if (index === 0) await waitFor(() => seen('TRYAGAIN'), 'a TRYAGAIN', 5000);
    }
    // All moved, slot not yet reassigned: the source redirects callers with ASK.
    await waitFor(() => seen('ASK'), 'an ASK', 5000);
    for (const port of [target, source, ...masters.filter((port) => port !== source && port !== target)]) {
      await nodeCommand(port, 'CLUSTER', 'SETSLOT', slot, 'NODE', String(targetId));
    }
    const movedAt = attempts();
    await waitFor(() => attempts() >= Math.max(limit + 150, movedAt + 150), 'load after the move');
    await Promise.all(loads.map((running) => running.stop()));

    expect(loads.flatMap(({ tally }) => tally.errors)).toEqual([]);
    expect(loads.reduce((sum, { tally }) => sum + tally.allowed, 0)).toBe(limit);
    // The key now lives on the target only, and stays spent there.
    for (const entry of entries) {
      expect(await nodeCommand(target, 'EXISTS', entry)).toBe(1);
    }
    expect((await first.peek(key)).allowed).toBe(false);
    const redirects = await errorCounts(masters, ['MOVED', 'ASK', 'TRYAGAIN']);
    expect(redirects.MOVED).toBeGreaterThan(0);
    expect(redirects.ASK).toBeGreaterThan(0);
    expect(redirects.TRYAGAIN).toBeGreaterThan(0);
  });
});

/**
 * Kills the master serving one key, then checks that keys elsewhere never notice, checks of
 * that key fail (never hang) while its slots have no master, and resume with exact counts.
 */
async function killMasterUnderLoad(store: Store, name: string, resumesOnPromotedReplica: boolean) {
  const limit = 1000;
  const limiter = createLimiter({
    rules: { name: 'log', algorithm: 'sliding-log', limit, window: '1h' },
    store,
    prefix: `failover-${name}`,
    // Above ioredis' own command timeout (this test watches how the clients fail over), and below
    // the probe's "hung" mark: whatever a client does, Floodgate's deadline answers first.
    timeout: IOREDIS_COMMAND_TIMEOUT_MS + 1000,
  });
  const ranges = await cluster.slotRanges();
  const masters = [...new Set(ranges.map((range) => range.master))];
  const victim = masters[0] as number;
  const servedBy = (port: number) => (slot: number) =>
    ranges.some((range) => range.master === port && range.from <= slot && slot <= range.to);
  // The client may still be catching up with an earlier failover: wait until it reaches every master.
  for (const port of masters) {
    const key = findKey(limiter, `warm-up-${port}`, servedBy(port));
    await waitFor(
      () =>
        limiter.peek(key).then(
          () => true,
          () => false,
        ),
      `${name} to reach ${port}`,
    );
  }
  const victimKey = findKey(limiter, 'victim', servedBy(victim));
  const others = masters
    .filter((port) => port !== victim)
    .flatMap((port) => [
      findKey(limiter, `a-${port}`, servedBy(port)),
      findKey(limiter, `b-${port}`, servedBy(port)),
    ]);
  const loads = others.map((key) => load(limiter, key, 5));

  let admitted = 0;
  for (let i = 0; i < 20; i++) if (admittedByStore(await limiter.check(victimKey))) admitted++;
  // Replication is asynchronous: let the replica have every admission before the crash.
  await waitReplicated(victim);
  await cluster.node(victim).kill('SIGKILL');

  /**
   * One check of the victim's key: 'allowed', 'denied', 'failed' (the store failed and the
   * onStoreError policy answered, flagged degraded) or 'hung'.
   */
  let lastError = '';
  async function probe() {
    const check = limiter.check(victimKey).then(
      (decision) => {
        if (decision.degraded !== false) {
          lastError = `degraded: ${decision.degraded}`;
          return 'failed';
        }
        return decision.allowed ? 'allowed' : 'denied';
      },
      (error: Error) => {
        lastError = `${error.constructor.name}: ${error.message}`;
        return 'failed';
      },
    );
    return Promise.race([check, sleep(HUNG_MS).then(() => 'hung')]);
  }

  // While the slots have no master, every check of the key fails, promptly; then it resumes.
  const outcomes: string[] = [];
  const probeUntilAllowed = () =>
    waitFor(
      async () => {
        outcomes.push(await probe());
        await sleep(20);
        return outcomes.at(-1) === 'allowed';
      },
      () => `${name} to resume (${outcomes.length} probes, last error ${lastError})`,
    );
  let promoted = false;
  const promotion = cluster.waitHealthy().then(() => {
    promoted = true;
  });
  while (!promoted) {
    outcomes.push(await probe());
    await sleep(20);
  }
  await promotion;
  if (resumesOnPromotedReplica) await probeUntilAllowed();
  // The crashed master comes back (as a supervisor would restart it) and rejoins as a replica.
  await cluster.node(victim).restart();
  await cluster.waitHealthy({ replicas: 3 });
  if (!resumesOnPromotedReplica) await probeUntilAllowed();
  expect(outcomes[0]).toBe('failed');
  expect(outcomes.filter((outcome) => outcome !== 'failed' && outcome !== 'allowed')).toEqual([]);
  admitted += outcomes.filter((outcome) => outcome === 'allowed').length;
  for (let i = 0; i < 10; i++) if (admittedByStore(await limiter.check(victimKey))) admitted++;
  await Promise.all(loads.map((running) => running.stop()));

  // Keys on the other masters never saw an error; every count is exact.
  expect(loads.flatMap(({ tally }) => tally.errors)).toEqual([]);
  for (const [index, key] of others.entries()) {
    const allowed = loads[index]?.tally.allowed as number;
    expect(allowed).toBeGreaterThan(0);
    expect(allowed).toBeLessThanOrEqual(limit);
    // A peek reports what a check would leave: one less than what is left now (never below 0, so
    // a key whose load used up the whole limit during a long failover shows 0).
    expect((await limiter.peek(key)).remaining, key).toBe(Math.max(0, limit - allowed - 1));
  }
  // Every check the store decided is counted exactly once. A check that failed (degraded) may
  // still have reached the node before the answer was lost: it counts at most once, never twice.
  const counted = limit - 1 - (await limiter.peek(victimKey)).remaining;
  const failed = outcomes.filter((outcome) => outcome === 'failed').length;
  expect(counted).toBeGreaterThanOrEqual(admitted);
  expect(counted).toBeLessThanOrEqual(admitted + failed);
}

describe('failover: SIGKILL one master under load', () => {
  it('ioredis Cluster: other masters unaffected, the dead one fails fast, resumes on the promoted replica', async () => {
    await killMasterUnderLoad(storeOf('ioredis'), 'ioredis', true);
  });

  it('node-redis cluster: other masters unaffected, the dead one fails fast, resumes once the topology changes again', async () => {
    // node-redis 5.9 rereads the slot map only on MOVED, which a dead node never sends: it resumes
    // when the old master is back (as a replica, answering MOVED). See docs/cluster.md.
    await killMasterUnderLoad(storeOf('node-redis'), 'node-redis', false);
  });
});
