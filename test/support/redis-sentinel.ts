/**
 * A throwaway Sentinel-managed Redis for tests: a primary, two replicas and (by default) three
 * `redis-server --sentinel` processes watching them, on free loopback ports, with short timeouts so
 * a failover completes in a few seconds: two failovers in a row, each to a replica in sync (a
 * failed primary rejoins only once a sentinel next looks at it, about 10 s). Start one per test
 * FILE in beforeAll.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeCommand, parseInfo, type Reply, waitReplicated } from './redis-cluster.js';
import { freePort, type RedisServer, startRedisServer } from './redis-server.js';

export interface SentinelGroup {
  /** The name the sentinels monitor the primary under (a client's `name` option). */
  readonly name: string;
  /** The primary at start. */
  readonly primary: RedisServer;
  /** Its replicas at start: a failover promotes the first while it is in sync, then the second. */
  readonly replicas: readonly [RedisServer, RedisServer];
  /** The sentinels' addresses (a client's `sentinels` option). */
  readonly sentinels: { host: string; port: number }[];
  /** Waits until every sentinel names the server on `port` as the primary. */
  waitPrimary(port: number, timeoutMs?: number): Promise<void>;
  /**
   * Waits until a failover can happen and lose nothing written so far: every sentinel knows the
   * others and a replica in sync, which has everything the primary on `port` wrote.
   */
  waitReady(port: number): Promise<void>;
  /** Stops every process and removes the temporary directory. */
  stop(): Promise<void>;
}

export interface SentinelGroupOptions {
  /** Number of sentinels (default 3, quorum 2: a majority). */
  sentinels?: number;
  /** `down-after-milliseconds`: how long the primary must not answer before it is down (default 1000). */
  downAfterMs?: number;
  /** `failover-timeout` (default 3000). */
  failoverTimeoutMs?: number;
}

/** Field/value pairs, as SENTINEL MASTER answers, as an object. */
function pairs(reply: Reply): Record<string, string> {
  const list = reply as string[];
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) fields[list[i] as string] = list[i + 1] as string;
  return fields;
}

/** How many replicas of the server on `port` are online (synced, streaming). */
async function online(port: number): Promise<number> {
  const info = parseInfo(await nodeCommand(port, 'INFO', 'replication'));
  return Object.entries(info).filter(
    ([field, value]) => /^slave\d+$/.test(field) && value.includes('state=online'),
  ).length;
}

async function waitUntil(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await condition()) return;
    } catch {
      // a process still starting, or the one that was just killed: ask again
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * @example
 * let group: SentinelGroup;
 * beforeAll(async () => { group = await startSentinelGroup(); });
 * afterAll(() => group?.stop());
 */
export async function startSentinelGroup(options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
  const count = options.sentinels ?? 3;
  const quorum = Math.floor(count / 2) + 1;
  const name = 'floodgate';
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-sentinel-'));
  const servers: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // A first sync otherwise waits 5 s for more replicas to share the transfer; and a replica
    // writes the snapshot it receives to a file of its own in the temporary directory.
    const dataArgs = (n: number) => [
      '--repl-diskless-sync-delay',
      '0',
      '--dir',
      dir,
      '--dbfilename',
      `${n}.rdb`,
    ];
    const primary = await startRedisServer({ args: dataArgs(0) });
    servers.push(primary);
    // The lower replica-priority is promoted first.
    for (const priority of [10, 20]) {
      const replicaOf = ['--replicaof', '127.0.0.1', String(primary.port)];
      servers.push(
        await startRedisServer({
          args: [...dataArgs(servers.length), ...replicaOf, '--replica-priority', String(priority)],
        }),
      );
    }
    // A sentinel reads a replica's link once it finds it, then every 10 s: let them sync first.
    await waitUntil(async () => (await online(primary.port)) === 2, 'the replicas to sync', 10_000);
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      const config = join(dir, `sentinel-${port}.conf`);
      await writeFile(
        config,
        [
          `sentinel monitor ${name} 127.0.0.1 ${primary.port} ${quorum}`,
          `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${name} ${options.failoverTimeoutMs ?? 3000}`,
          '',
        ].join('\n'),
      );
      servers.push(await startRedisServer({ port, config, args: ['--sentinel', '--dir', dir] }));
    }
    const sentinels = servers.slice(3).map((server) => ({ host: '127.0.0.1', port: server.port }));

    /** Every sentinel knows the others (a failover needs the quorum's votes) and a live replica. */
    async function ready(): Promise<boolean> {
      const views = await Promise.all(
        sentinels.map(async ({ port }) => {
          const master = pairs(await nodeCommand(port, 'SENTINEL', 'MASTER', name));
          const replicas = ((await nodeCommand(port, 'SENTINEL', 'REPLICAS', name)) as Reply[]).map(pairs);
          return (
            master['num-other-sentinels'] === String(count - 1) &&
            replicas.some((replica) => replica.flags === 'slave')
          );
        }),
      );
      return views.every(Boolean);
    }
    return {
      name,
      primary,
      replicas: [servers[1] as RedisServer, servers[2] as RedisServer],
      sentinels,
      waitPrimary: (port, timeoutMs = 20_000) =>
        waitUntil(
          async () => {
            const named = await Promise.all(
              sentinels.map(async (sentinel) => {
                const address = await nodeCommand(sentinel.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name);
                return Number((address as string[])[1]);
              }),
            );
            return named.every((named) => named === port);
          },
          `every sentinel to name ${port} the primary`,
          timeoutMs,
        ),
      async waitReady(port) {
        await waitUntil(ready, 'the sentinels to find each other and a replica', 20_000);
        await waitUntil(async () => (await online(port)) > 0, `a replica of ${port} in sync`, 20_000);
        await waitReplicated(port);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
