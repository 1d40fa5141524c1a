/**
 * Floodgate on a real Redis Cluster (3 masters + 3 replicas), unchanged, through ioredis,
 * node-redis and iovalkey: the shared specification table, one script call on one node per
 * check for any rule combination, the slot spread of client-chosen keys, and the per-node
 * function library and script cache.
 */

import { Cluster as IoRedisCluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../../src/algorithms/index.js';
import { encodeKey, keyHead } from '../../src/base/key-encoding.js';
import { createLimiter, type RuleOptions, redisStore } from '../../src/index.js';
import { MAX_RULES } from '../../src/rules.js';
import { readServerConfig } from '../../src/stores/redis/memory-policy.js';
import { scriptFor } from '../../src/stores/redis/script.js';
import { runSpecification } from '../algorithms/run-spec.js';
import {
  hashTag,
  keySlot,
  nodeCommand,
  nodeCommands,
  nodeStats,
  type RedisCluster,
  type SlotRange,
  startRedisCluster,
} from '../support/redis-cluster.js';
import { expectExactBursts, limiterOn, manyRules } from '../support/rule-bound.js';
import { FIVE_ALGORITHM_RULES } from '../support/rules.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';
import { type ClusterClients, connectClients } from './clients.js';
import { clientKeys, redisKeys, VICTIM } from './keys.js';

let cluster: RedisCluster;
let clients: ClusterClients;
let ranges: SlotRange[];
let masters: number[];

beforeAll(async () => {
  cluster = await startRedisCluster();
  clients = await connectClients(cluster);
  ranges = await cluster.slotRanges();
  masters = await cluster.masters();
});

afterAll(async () => {
  await clients?.close();
  await cluster?.stop();
});

function masterOf(slot: number): number {
  const range = ranges.find((candidate) => candidate.from <= slot && slot <= candidate.to);
  if (range === undefined) throw new Error(`slot ${slot} is not served`);
  return range.master;
}

/** Sums one counter of an INFO section over the masters. */
async function sumStat(section: 'errorstats' | 'commandstats', name: string, field: string) {
  const stats = await Promise.all(masters.map((port) => nodeStats(port, section)));
  return stats.map((node) => node[name]?.[field] ?? 0);
}

async function resetStats(): Promise<void> {
  await Promise.all(masters.map((port) => nodeCommand(port, 'CONFIG', 'RESETSTAT')));
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

describe('the specification table on Redis Cluster', () => {
  describe('through an ioredis Cluster', () => {
    runSpecification((clock) => redisStore({ client: clients.ioredis, clock }), 'spec-io');
  });
  describe('through a node-redis cluster', () => {
    runSpecification((clock) => redisStore({ client: clients.nodeRedis, clock }), 'spec-node');
  });
  describe('through an iovalkey Cluster', () => {
    runSpecification((clock) => redisStore({ client: clients.valkey, clock }), 'spec-valkey');
  });
});

describe('all five algorithms in one limiter', () => {
  const rules = FIVE_ALGORITHM_RULES;

  it('is one script call on the one node that owns every key, for every client: no CROSSSLOT', async () => {
    // Keys spread over all masters, hostile ones included.
    const keys = clientKeys().flatMap((family) => family.keys.slice(0, 10));
    // Load the library everywhere first, so the count below is of checks alone.
    const library = scriptFor(rules.map((rule) => ALGORITHMS[rule.algorithm].code)).library;
    await Promise.all(masters.map((port) => nodeCommand(port, 'FUNCTION', 'LOAD', 'REPLACE', library)));
    await resetStats();

    for (const { name, store } of clients.stores) {
      // No heavy hitters: their merge into the fleet's sketch is a call on another slot.
      const limiter = createLimiter({ rules, store, prefix: `five-${name}`, timeout: '5s', topKeys: 0 });
      for (const key of keys) {
        const decisions = [];
        for (let i = 0; i < 4; i++) decisions.push(await limiter.check(key));
        expect(
          decisions.map((decision) => [decision.allowed, decision.remaining]),
          `${name} ${JSON.stringify(key)}`,
        ).toEqual([
          [true, 2],
          [true, 1],
          [true, 0],
          [false, 0],
        ]);
        expect(decisions[3]?.rules.map((rule) => rule.rule)).toEqual(['fw', 'sw', 'sl', 'tb', 'gc']);
      }
      // Every Redis key of every rule (sliding-log's two included) sits on the predicted master.
      const byMaster = new Map<number, string[]>();
      for (const key of keys) {
        for (const redisKey of redisKeys(limiter, key)) {
          const port = masterOf(keySlot(redisKey));
          byMaster.set(port, [...(byMaster.get(port) ?? []), redisKey]);
        }
      }
      expect([...byMaster.keys()].sort()).toEqual(masters);
      for (const [port, redisKeys] of byMaster) {
        const replies = await nodeCommands(
          port,
          redisKeys.map((redisKey) => ['EXISTS', redisKey]),
        );
        expect(replies, `${name}: keys on master ${port}`).toEqual(redisKeys.map(() => 1));
      }
    }

    const checks = clients.stores.length * keys.length * 4;
    const fcall = await sumStat('commandstats', 'cmdstat_fcall', 'calls');
    expect(sum(fcall)).toBe(checks);
    expect(fcall.every((calls) => calls > 0)).toBe(true);
    expect(sum(await sumStat('commandstats', 'cmdstat_evalsha', 'calls'))).toBe(0);
    expect(sum(await sumStat('commandstats', 'cmdstat_eval', 'calls'))).toBe(0);
    expect(sum(await sumStat('errorstats', 'errorstat_CROSSSLOT', 'count'))).toBe(0);
  });
});

describe('quotaLease on Redis Cluster', () => {
  it("takes a hot key's slices on its own shard, through every client: the limit exactly, few calls", async () => {
    const rules = [
      // Buckets, whose 7-day refill adds no unit during the test: no window boundary to straddle.
      { name: 'gc', algorithm: 'gcra', limit: 3000, window: '7d', quotaLease: true },
      { name: 'tb', algorithm: 'token-bucket', limit: 3000, window: '7d', quotaLease: { max: 100 } },
    ] as const;
    for (const { name, store } of clients.stores) {
      await resetStats();
      // No heavy hitters: their merge into the fleet's sketch (at close) is a call on another slot.
      const limiter = createLimiter({
        rules: [...rules],
        store,
        prefix: `lease-${name}`,
        timeout: '5s',
        topKeys: 0,
      });
      const key = `hot-${name}`;
      let admitted = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = 0; i < 500; i++) if ((await limiter.check(key)).allowed) admitted++;
        }),
      );
      await limiter.close();
      expect(admitted, name).toBe(3000);
      const owner = masterOf(keySlot(redisKeys(limiter, key)[0] as string));
      const calls = (await nodeStats(owner, 'commandstats')).cmdstat_fcall?.calls ?? 0;
      // 4,000 checks: 8 before the key is hot, then slices of up to 100 units, and denials cached.
      expect(calls, name).toBeLessThanOrEqual(200);
      // Every call (takes, give-backs) went to the key's own master.
      expect(sum(await sumStat('commandstats', 'cmdstat_fcall', 'calls')), name).toBe(calls);
      expect(sum(await sumStat('errorstats', 'errorstat_CROSSSLOT', 'count'))).toBe(0);
    }
  });
});

describe('rule sets at the bound a limiter accepts', () => {
  it('40 concurrent checks of 1,000 rules each are decided exactly, through ioredis and node-redis', async () => {
    // The shared ioredis clients fail a command after 1 s (for the failover tests); a call of
    // 4,000 rules can take longer on a loaded machine, so this one has no command timeout.
    const ioredis = new IoRedisCluster(cluster.rootNodes, { scaleReads: 'master' });
    try {
      for (const [name, client] of [
        ['ioredis', ioredis],
        ['node-redis', clients.nodeRedis],
      ] as const) {
        const store = redisStore({ client });
        await expectExactBursts(limiterOn(store, manyRules('fixed-window', 33), `bound-${name}`), 'k');
      }
    } finally {
      ioredis.disconnect();
    }
  });

  it('reset() of 3,000 sliding-log rules across plans (6,000 keys) forgets them all, on every client', async () => {
    const plans = Object.fromEntries(
      ['a', 'b', 'c'].map((plan) => [plan, manyRules('sliding-log', 5, MAX_RULES, plan)]),
    );
    for (const { name, store } of clients.stores) {
      const limiter = createLimiter({
        plans,
        defaultPlan: 'a',
        store,
        prefix: `reset-${name}`,
        timeout: '10s',
      });
      for (const plan of ['a', 'b', 'c']) await limiter.check('tenant', { plan });
      await limiter.reset('tenant');
      const after = await Promise.all(['a', 'b', 'c'].map((plan) => limiter.peek('tenant', { plan })));
      // As fresh (a peek's remaining counts the request it peeks for); 3 had reset missed a key.
      expect(
        after.map((decision) => decision.remaining),
        name,
      ).toEqual([4, 4, 4]);
    }
  });
});

describe('maxmemory-policy', () => {
  it('is read from every master, and one allkeys-* master is warned about, through every client', async () => {
    for (const client of [clients.ioredis, clients.nodeRedis, clients.valkey]) {
      expect((await readServerConfig(client)).policies).toEqual(masters.map(() => 'noeviction'));
    }
    await nodeCommand(masters[1] as number, 'CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      for (const client of [clients.ioredis, clients.nodeRedis, clients.valkey]) {
        const warnings = await redisStore({ client }).inspect?.();
        expect(warnings?.map((warning) => warning.code)).toEqual(['maxmemory-policy']);
      }
    } finally {
      await nodeCommand(masters[1] as number, 'CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    }
  });
});

describe('hash-slot spread of client-chosen keys', () => {
  const families = clientKeys();
  const fullKey = (key: string) => `${keyHead('floodgate', key)}:api:sl`;

  it('10,000 keys spread evenly over all three masters, whatever their braces or bytes', () => {
    expect(families.reduce((total, family) => total + family.keys.length, 0)).toBe(10_000);
    const share = (keys: string[]) => {
      const counts = new Map<number, number>(masters.map((port) => [port, 0]));
      for (const key of keys) {
        const port = masterOf(keySlot(fullKey(key)));
        counts.set(port, (counts.get(port) ?? 0) + 1);
      }
      return [...counts.values()].map((count) => count / keys.length);
    };
    const all = share(families.flatMap((family) => family.keys));
    expect(all).toHaveLength(3);
    for (const fraction of all) {
      expect(fraction).toBeGreaterThanOrEqual(0.25);
      expect(fraction).toBeLessThanOrEqual(0.42);
    }
    for (const family of families) {
      for (const fraction of share(family.keys)) {
        expect(fraction, family.name).toBeGreaterThanOrEqual(0.25);
        expect(fraction, family.name).toBeLessThanOrEqual(0.42);
      }
    }
  });

  it('brace injection cannot choose the slot: the hash tag is always the whole encoded key', () => {
    const stray = families
      .flatMap((family) => family.keys)
      .filter((key) => {
        const tag = hashTag(fullKey(key)).toString('latin1');
        return tag !== encodeKey(key) || /[{}]/.test(tag);
      });
    expect(stray).toEqual([]);
    const victimSlot = keySlot(fullKey(VICTIM));
    // With the user's key pasted raw between braces, `victim}x` would hash as `victim`:
    expect(keySlot(`floodgate:{${VICTIM}}x}:api:sl`)).toBe(victimSlot);
    for (const attack of [`${VICTIM}}x`, `x}{${VICTIM}`, `{${VICTIM}}`, `{${VICTIM}`, `}{${VICTIM}}`]) {
      expect(keySlot(fullKey(attack)), attack).not.toBe(victimSlot);
    }
    // Over the whole injection family, the victim's slot gets what chance gives any slot
    // (2,000 keys / 16,384 slots: 0.12 expected), where raw braces would have sent it hundreds.
    const injections = families.find((family) => family.name === 'brace injection')?.keys ?? [];
    const raw = injections.filter((key) => keySlot(`floodgate:{${key}}:api:sl`) === victimSlot);
    const encoded = injections.filter((key) => keySlot(fullKey(key)) === victimSlot);
    expect(raw.length).toBeGreaterThanOrEqual(400);
    expect(encoded.length).toBeLessThanOrEqual(2);
  });

  it('agrees with CLUSTER KEYSLOT on the real cluster, for raw strings and Floodgate keys', async () => {
    const raw = [
      'foo',
      '{user1000}.following',
      'foo{}{bar}',
      'foo{{bar}}zap',
      'foo{bar}{zap}',
      '{}',
      '}{',
      '{',
      '}',
      '{a',
      'a}',
      '',
    ];
    const sample = families.flatMap((family) => family.keys.filter((_, index) => index % 40 === 0));
    const names = [...raw, ...sample, ...sample.map(fullKey)];
    const replies = await nodeCommands(
      masters[0] as number,
      names.map((name) => ['CLUSTER', 'KEYSLOT', name]),
      10_000,
    );
    expect(replies).toEqual(names.map((name) => keySlot(name)));
  });
});

describe('the function library and the script cache are per node', () => {
  // A function library is replicated to a master's replicas but not loaded on the other
  // masters; SCRIPT LOAD is not even replicated. Both can be wiped on a node at any time.
  it.each([
    {
      wipe: 'FUNCTION FLUSH',
      stores: () => clients.stores,
      calledBy: 'cmdstat_fcall',
      // Every master lost the library and had it loaded again.
      reloaded: async () => sumStat('commandstats', 'cmdstat_function|load', 'calls'),
    },
    {
      wipe: 'SCRIPT FLUSH',
      stores: () => clients.storesWith({ functions: false }),
      calledBy: 'cmdstat_evalsha',
      // Every master lost the script at least once and had it sent again.
      reloaded: async () => sumStat('errorstats', 'errorstat_NOSCRIPT', 'count'),
    },
  ])(
    '$wipe on every master mid-run: no caller sees an error, nothing is counted twice',
    async ({ wipe, stores, calledBy, reloaded }) => {
      const rules: RuleOptions[] = [
        { name: 'log', algorithm: 'sliding-log', limit: 1000, window: '1h' },
        { name: 'bucket', algorithm: 'token-bucket', limit: 1000, window: '1d' },
      ];
      const keys = clientKeys().flatMap((family) => family.keys.slice(100, 104));
      const perStore = 30;
      const prefix = `flush-${wipe.split(' ')[0]?.toLowerCase()}`;
      const storeList = stores();
      await resetStats();

      let done = 0;
      const total = storeList.length * keys.length * perStore;
      const flushes: Promise<unknown>[] = [];
      const flushAt = new Set([Math.floor(total / 4), Math.floor(total / 2), Math.floor((total * 3) / 4)]);
      const errors: unknown[] = [];
      let allowed = 0;
      await Promise.all(
        storeList.flatMap(({ name, store }) => {
          const limiter = createLimiter({ rules, store, prefix, timeout: '5s' });
          return keys.map(async (key) => {
            for (let i = 0; i < perStore; i++) {
              try {
                if ((await limiter.check(key)).allowed) allowed++;
              } catch (error) {
                errors.push([name, error]);
              }
              if (flushAt.has(++done)) {
                flushes.push(Promise.all(masters.map((port) => nodeCommand(port, ...wipe.split(' ')))));
              }
            }
          });
        }),
      );
      await Promise.all(flushes);

      expect(errors).toEqual([]);
      expect(allowed).toBe(total);
      const limiter = createLimiter({
        timeout: SLOW_MACHINE_TIMEOUT,
        rules,
        store: storeList[0]?.store,
        prefix,
      });
      for (const key of keys) {
        const decision = await limiter.peek(key);
        // A peek reports what a check would leave: one less than what is left now.
        const left = 1000 - storeList.length * perStore - 1;
        expect(
          decision.rules.map((rule) => rule.remaining),
          JSON.stringify(key),
        ).toEqual([left, left]);
      }
      // Every check went by this command (the ones that met a wiped node twice).
      expect(sum(await sumStat('commandstats', calledBy, 'calls'))).toBeGreaterThanOrEqual(total);
      expect((await reloaded()).every((count) => count > 0)).toBe(true);
    },
  );
});

describe('the fleet view on Redis Cluster', () => {
  it("merges and reads a prefix's sketches on its own slot, through every client", async () => {
    for (const { name, store } of clients.stores) {
      await resetStats();
      const prefix = `fleet-${name}`;
      const writer = createLimiter({ rules: FIVE_ALGORITHM_RULES, store, prefix, fleetInterval: '20ms' });
      for (const key of ['a', 'b', 'a', 'c', 'a']) await writer.check(key);
      await writer.close();
      const reader = createLimiter({ rules: FIVE_ALGORITHM_RULES, store, prefix });
      expect(await reader.top({ by: 'checked', fleet: true, limit: 2 }), name).toEqual([
        { key: 'a', count: 3, error: 0 },
        { key: 'b', count: 1, error: 0 },
      ]);
      await reader.close();
      expect(sum(await sumStat('errorstats', 'errorstat_CROSSSLOT', 'count'))).toBe(0);
    }
  });
});
