/**
 * A throwaway Redis Cluster for tests: masters and replicas started from the `redis-server`
 * binary on free loopback ports, joined with `redis-cli --cluster create`, torn down afterwards
 * with their temporary directory. Start one per test FILE in beforeAll (it takes a few seconds).
 *
 * Also here: a minimal RESP connection for admin commands aimed at one specific node (no
 * redirects, no reconnects, no offline queue: exactly what the harness must not get from the
 * clients under test), and `keySlot`, an independent CRC16 slot function to check clients and
 * Floodgate's key layout against.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort, type RedisServer, startRedisServer } from './redis-server.js';

const run = promisify(execFile);
export const SLOTS = 16384;

// ---------------------------------------------------------------------------------------------
// Slots: CRC16-XMODEM(hash tag or key) mod 16384, per the Redis Cluster specification.

const CRC16_TABLE = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc;
}

/** The hash tag: bytes between the first `{` and the first `}` after it, if non-empty. */
export function hashTag(key: string | Uint8Array): Buffer {
  const bytes = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return bytes.subarray(open + 1, close);
  }
  return bytes;
}

export function keySlot(key: string | Uint8Array): number {
  return crc16(hashTag(key)) % SLOTS;
}

// ---------------------------------------------------------------------------------------------
// RESP: one short-lived connection per command, aimed at exactly one node.

export type Reply = string | number | null | Error | Reply[];

/** Parses one reply at `offset`; returns undefined when the buffer holds only part of it. */
function parseReply(buffer: Buffer, offset: number): { value: Reply; end: number } | undefined {
  const lineEnd = buffer.indexOf('\r\n', offset);
  if (lineEnd === -1) return undefined;
  const line = buffer.toString('utf8', offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (String.fromCharCode(buffer[offset] as number)) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new Error(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return undefined;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, at);
        if (item === undefined) return undefined;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`unexpected RESP reply: ${buffer.toString('utf8', offset, lineEnd)}`);
  }
}

function encodeCommand(args: readonly (string | number)[]): string {
  let out = `*${args.length}\r\n`;
  for (const arg of args) out += `$${Buffer.byteLength(String(arg))}\r\n${arg}\r\n`;
  return out;
}

/**
 * Sends commands to the node on `port` over one fresh connection and resolves with their replies
 * (error replies come back as Error values, not rejections).
 */
export function nodeCommands(
  port: number,
  commands: readonly (readonly (string | number)[])[],
  timeoutMs = 2000,
): Promise<Reply[]> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`redis on ${port}: no reply within ${timeoutMs} ms`));
    }, timeoutMs);
    let buffer = Buffer.alloc(0);
    const replies: Reply[] = [];
    socket.on('connect', () => socket.write(commands.map(encodeCommand).join('')));
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const parsed = parseReply(buffer, 0);
        if (parsed === undefined) break;
        replies.push(parsed.value);
        buffer = buffer.subarray(parsed.end);
      }
      if (replies.length === commands.length) {
        clearTimeout(timer);
        socket.destroy();
        resolve(replies);
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** One command to one node; an error reply rejects. */
export async function nodeCommand(port: number, ...args: (string | number)[]): Promise<Reply> {
  const [reply] = await nodeCommands(port, [args]);
  if (reply instanceof Error) throw new Error(`redis on ${port}: ${args.join(' ')}: ${reply.message}`);
  return reply as Reply;
}

/** `INFO`-style "field:value" lines as an object. */
export function parseInfo(text: Reply): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of String(text).split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return fields;
}

/**
 * Counters from an INFO section whose values are `a=1,b=2` lists (errorstats, commandstats),
 * e.g. `{ errorstat_NOSCRIPT: { count: 3 } }` or `{ cmdstat_evalsha: { calls: 10, ... } }`.
 */
export async function nodeStats(
  port: number,
  section: 'errorstats' | 'commandstats',
): Promise<Record<string, Record<string, number>>> {
  const stats: Record<string, Record<string, number>> = {};
  for (const [name, value] of Object.entries(parseInfo(await nodeCommand(port, 'INFO', section)))) {
    stats[name] = Object.fromEntries(
      value.split(',').map((pair) => {
        const [field = '', number = ''] = pair.split('=');
        return [field, Number(number)];
      }),
    );
  }
  return stats;
}

/**
 * Waits until every replica of the master on `port` has applied everything the master has
 * written so far (replication is asynchronous: a master killed earlier loses the difference).
 */
export async function waitReplicated(port: number, timeoutMs = 5000): Promise<void> {
  const info = parseInfo(await nodeCommand(port, 'INFO', 'replication'));
  const offset = Number(info.master_repl_offset);
  const replicas = Object.entries(info)
    .filter(([name]) => /^slave\d+$/.test(name))
    .map(([, value]) => Number(/port=(\d+)/.exec(value)?.[1]));
  if (replicas.length === 0) throw new Error(`master ${port} has no replica`);
  const deadline = Date.now() + timeoutMs;
  for (const replica of replicas) {
    while (Number(parseInfo(await nodeCommand(replica, 'INFO', 'replication')).slave_repl_offset) < offset) {
      if (Date.now() > deadline) throw new Error(`replica ${replica} did not catch up with ${port}`);
      await sleep(10);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The cluster.

export interface ClusterNode {
  readonly port: number;
  readonly busPort: number;
  /** Whether the process is running (false after `kill`, true again after `restart`). */
  readonly alive: boolean;
  /** Sends `signal` (default SIGKILL) and waits for the process to exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Starts the node again on the same ports with the same nodes.conf, as a supervisor would: it
   * rejoins the cluster (a failed-over master comes back as a replica of its successor).
   */
  restart(): Promise<void>;
  /** Stops the process if it runs. */
  stop(): Promise<void>;
}

/**
 * A contiguous slot range and the ports serving it, as `CLUSTER SLOTS` reports it (Redis 7 lists a
 * replica there only once it has synced).
 */
export interface SlotRange {
  readonly from: number;
  readonly to: number;
  readonly master: number;
  readonly replicas: number[];
}

export interface RedisCluster {
  /** Every node, in the order given to `redis-cli --cluster create`. */
  readonly nodes: readonly ClusterNode[];
  /** Seed addresses for clients: every node. */
  readonly rootNodes: { host: string; port: number }[];
  /** The node on `port`. */
  node(port: number): ClusterNode;
  /** The slot map as a live node sees it. */
  slotRanges(): Promise<SlotRange[]>;
  /** Port of the master serving `slot`, per a live node. */
  masterOf(slot: number): Promise<number>;
  /** Ports of the masters that serve slots, ascending. */
  masters(): Promise<number[]>;
  /**
   * Waits until every live node reports cluster_state:ok with all slots served, all agree on
   * which live master serves which slots, and every live replica is in sync with its master.
   * `replicas`: also wait until that many nodes are replicas (e.g. after a restarted node rejoins).
   */
  waitHealthy(options?: { timeoutMs?: number; replicas?: number }): Promise<void>;
  /** Kills every node and removes the temporary directory. */
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** Number of masters (default 3). */
  masters?: number;
  /** Replicas per master (default 1). */
  replicas?: number;
  /** `cluster-node-timeout` in ms (default 1000: a failover completes within a few seconds). */
  nodeTimeoutMs?: number;
}

function nodeArgs(dir: string, busPort: number, nodeTimeoutMs: number, port: number): string[] {
  return [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, `nodes-${port}.conf`),
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    // The bus port is chosen explicitly: the default (port + 10000) may be taken or exceed 65535.
    '--cluster-port',
    String(busPort),
    // With one master down the other masters keep serving their own slots (see docs/cluster.md).
    '--cluster-require-full-coverage',
    'no',
    // A replica's first sync otherwise waits 5 s for more replicas to share the transfer.
    '--repl-diskless-sync-delay',
    '0',
    '--dir',
    dir,
  ];
}

async function startNode(dir: string, nodeTimeoutMs: number): Promise<ClusterNode> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const busPort = await freePort();
    const args = nodeArgs(dir, busPort, nodeTimeoutMs, port);
    let server: RedisServer;
    try {
      server = await startRedisServer({ port, args });
    } catch (error) {
      // Another process may have taken one of the ports in the meantime.
      if (attempt >= 3) throw error;
      continue;
    }
    const running = () => server.process.exitCode === null && server.process.signalCode === null;
    return {
      port,
      busPort,
      get alive() {
        return running();
      },
      async kill(signal: NodeJS.Signals = 'SIGKILL') {
        if (!running()) return;
        const exited = once(server.process, 'exit');
        server.process.kill(signal);
        await exited;
      },
      async restart() {
        if (running()) throw new Error(`node ${port} is still running`);
        server = await startRedisServer({ port, args });
      },
      stop: () => server.stop(),
    };
  }
}

function toRanges(reply: Reply): SlotRange[] {
  if (!Array.isArray(reply)) throw new Error(`CLUSTER SLOTS: unexpected reply ${String(reply)}`);
  return reply
    .map((entry) => {
      const [from, to, master, ...replicas] = entry as [number, number, Reply[], ...Reply[][]];
      return {
        from,
        to,
        master: Number(master[1]),
        replicas: replicas.map((replica) => Number(replica[1])),
      };
    })
    .sort((a, b) => a.from - b.from);
}

/**
 * Starts a cluster (default 3 masters + 3 replicas) and waits until it is healthy.
 * @example
 * let cluster: RedisCluster;
 * beforeAll(async () => { cluster = await startRedisCluster(); });
 * afterAll(() => cluster?.stop());
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masterCount = options.masters ?? 3;
  const replicaCount = options.replicas ?? 1;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 1000;
  const dir = await mkdtemp(join(tmpdir(), 'floodgate-cluster-'));
  const nodes: ClusterNode[] = [];

  async function stop(): Promise<void> {
    await Promise.all(nodes.map((node) => node.stop()));
    await rm(dir, { recursive: true, force: true });
  }

  function livePorts(): number[] {
    return nodes.filter((node) => node.alive).map((node) => node.port);
  }

  async function slotRanges(): Promise<SlotRange[]> {
    let lastError: unknown;
    for (const port of livePorts()) {
      try {
        return toRanges(await nodeCommand(port, 'CLUSTER', 'SLOTS'));
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error(`no live node answered CLUSTER SLOTS: ${String(lastError)}`);
  }

  /**
   * Whether every live node is ok, serves all slots, and all agree on which live master serves
   * which slots; and every live replica is in sync with its master (or it could not take over).
   */
  async function isHealthy(expectedReplicas?: number): Promise<boolean> {
    const ports = livePorts();
    const views = await Promise.all(
      ports.map(async (port) => {
        const [info, slots, replication] = await nodeCommands(port, [
          ['CLUSTER', 'INFO'],
          ['CLUSTER', 'SLOTS'],
          ['INFO', 'replication'],
        ]);
        const fields = parseInfo(info as Reply);
        const role = parseInfo(replication as Reply);
        const ok =
          fields.cluster_state === 'ok' &&
          fields.cluster_slots_ok === String(SLOTS) &&
          fields.cluster_known_nodes === String(nodes.length) &&
          (role.role === 'master' || role.master_link_status === 'up');
        const ranges = toRanges(slots as Reply);
        return {
          ok,
          map: ranges.map(({ from, to, master }) => `${from}-${to}@${master}`).join(','),
          masters: new Set(ranges.map((range) => range.master)),
          role,
        };
      }),
    );
    const [first] = views;
    if (first === undefined || views.some((view) => !view.ok || view.map !== first.map)) return false;
    if (![...first.masters].every((port) => ports.includes(port))) return false;
    const replicas = views.filter((view) => view.role.role === 'slave').length;
    return expectedReplicas === undefined || replicas === expectedReplicas;
  }

  async function waitHealthy(timeoutMs = 20_000, expectedReplicas?: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        if (await isHealthy(expectedReplicas)) return;
      } catch {
        // a node may be busy (loading, failing over): ask again
      }
      if (Date.now() > deadline) throw new Error(`cluster not healthy within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  try {
    // allSettled, so a node that failed to start never leaves the others running.
    const started = await Promise.allSettled(
      Array.from({ length: masterCount * (1 + replicaCount) }, () => startNode(dir, nodeTimeoutMs)),
    );
    for (const result of started) {
      if (result.status === 'fulfilled') nodes.push(result.value);
    }
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        String(replicaCount),
        '--cluster-yes',
      ],
      { timeout: 30_000 },
    );
    await waitHealthy(20_000, masterCount * replicaCount);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodes,
    rootNodes: nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
    node(port) {
      const node = nodes.find((candidate) => candidate.port === port);
      if (node === undefined) throw new Error(`no cluster node on port ${port}`);
      return node;
    },
    slotRanges,
    async masterOf(slot) {
      const range = (await slotRanges()).find((candidate) => candidate.from <= slot && slot <= candidate.to);
      if (range === undefined) throw new Error(`slot ${slot} is not served`);
      return range.master;
    },
    async masters() {
      return [...new Set((await slotRanges()).map((range) => range.master))].sort((a, b) => a - b);
    },
    waitHealthy: (options = {}) => waitHealthy(options.timeoutMs, options.replicas),
    stop,
  };
}
