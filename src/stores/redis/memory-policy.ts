/**
 * Redis's `maxmemory-policy` and persistence, read once from every node that serves keys, and
 * the risks they pose. Under an `allkeys-*` policy a full Redis evicts any key, overrides (a `{ block: true }` has no
 * expiry) and their registry included, so a blocked key is let through again without a word.
 * `volatile-*` policies evict only keys with an expiry (limiter state, never an override without
 * a ttl); `noeviction` refuses writes instead (then a key over its limit stays denied, see
 * batch.ts). Read through the client's public methods; a user whose ACL denies CONFIG, a
 * proxy, or a client this module does not know is simply not inspected. Quotas counted by
 * calendar period also need persistence: a restart of a Redis that saves nothing resets them.
 */
import type { StoreWarning } from '../types.js';

type Command = (...args: string[]) => Promise<unknown>;

interface IoRedisLike {
  call(command: string, ...args: string[]): Promise<unknown>;
  nodes?(role: 'master'): IoRedisLike[];
  readonly isCluster?: boolean;
}

interface NodeRedisLike {
  configGet(parameter: string): Promise<Record<string, string>>;
}

interface NodeRedisClusterLike {
  readonly masters?: readonly unknown[];
  nodeClient(node: unknown): NodeRedisLike | Promise<NodeRedisLike>;
}

const has = (client: unknown, name: string): boolean =>
  typeof (client as Record<string, unknown> | null)?.[name] === 'function';

/** A `CONFIG GET maxmemory-policy` per node that serves keys, or none for a client not known here. */
function policyReaders(client: unknown): Command[] | Promise<Command[]> {
  if (has(client, 'evalsha') && has(client, 'call')) {
    const io = client as IoRedisLike;
    // A Cluster knows its masters once connected; before that, any node it reaches answers.
    const nodes = io.isCluster === true && has(io, 'nodes') ? (io.nodes?.('master') ?? []) : [];
    return (nodes.length > 0 ? nodes : [io]).map(
      (node) =>
        (...args) =>
          node.call('CONFIG', ...args),
    );
  }
  if (has(client, 'nodeClient')) {
    const cluster = client as NodeRedisClusterLike;
    return Promise.all((cluster.masters ?? []).map((master) => cluster.nodeClient(master))).then((nodes) =>
      nodes.flatMap((node) => policyReaders(node) as Command[]),
    );
  }
  if (has(client, 'configGet') && has(client, 'sendCommand')) {
    const node = client as NodeRedisLike;
    return [async (_get, parameter = '') => Object.values(await node.configGet(parameter))];
  }
  return [];
}

/** What the store reads of every node's configuration, once. */
export interface ServerConfig {
  /** Each node's maxmemory-policy. */
  readonly policies: readonly string[];
  /** Whether each node persists its data: AOF (`appendonly yes`) or RDB snapshots (a `save` rule). */
  readonly persists: readonly boolean[];
}

const UNREAD: ServerConfig = { policies: [], persists: [] };

/**
 * The configuration of every node, in no order (call it once the client is connected); empty
 * when it cannot be read (ACL, proxy, a client of another kind).
 */
export async function readServerConfig(client: unknown): Promise<ServerConfig> {
  try {
    const readers = await policyReaders(client);
    const value = (reply: unknown): string =>
      // ioredis: ['maxmemory-policy', 'noeviction']; node-redis: ['noeviction'].
      String(Array.isArray(reply) ? (reply[reply.length - 1] ?? '') : reply);
    const nodes = await Promise.all(
      readers.map((read) =>
        Promise.all(['maxmemory-policy', 'appendonly', 'save'].map((parameter) => read('GET', parameter))),
      ),
    );
    return {
      policies: nodes.map(([policy]) => value(policy)),
      persists: nodes.map(([, appendonly, save]) => value(appendonly) === 'yes' || value(save).trim() !== ''),
    };
  } catch {
    return UNREAD;
  }
}

const evictingOf = (policies: readonly string[]): string[] => [
  ...new Set(policies.filter((policy) => policy.startsWith('allkeys-'))),
];

/** The warning for the policies read, if any of them evicts keys without an expiry. */
export function memoryPolicyWarnings({ policies }: ServerConfig): StoreWarning[] {
  const evicting = evictingOf(policies);
  if (evicting.length === 0) return [];
  return [
    {
      code: 'maxmemory-policy',
      message: `Redis maxmemory-policy is ${evicting.join(', ')}: when Redis is full it may evict any key, including overrides (a block set with setOverride) and limiter state, letting blocked and limited keys through again; use noeviction (or a volatile-* policy, which evicts only keys with an expiry)`,
    },
  ];
}

/**
 * The warning for rules counted by calendar period (a day or longer) when the configuration can
 * lose their counts: a node that persists nothing loses every quota on a restart, and an
 * `allkeys-*` policy may evict a count before its period ends. Each cause is named.
 */
export function quotaDurabilityWarnings({ policies, persists }: ServerConfig): StoreWarning[] {
  const causes: string[] = [];
  if (persists.some((persisted) => !persisted)) {
    causes.push('Redis persists nothing (appendonly no and no save rule), so a restart resets them');
  }
  const evicting = evictingOf(policies);
  if (evicting.length > 0) {
    causes.push(
      `Redis maxmemory-policy is ${evicting.join(', ')}, so a full Redis may evict them before their period ends`,
    );
  }
  if (causes.length === 0) return [];
  return [
    {
      code: 'quota-durability',
      message: `rules counted by calendar period keep their quotas for a day or longer, which are at risk: ${causes.join('; and ')}; enable AOF (appendonly yes) or RDB snapshots and use noeviction or a volatile-* policy (see docs/calendar.md)`,
    },
  ];
}
