/**
 * Redis's `maxmemory-policy`, read once from every node that serves keys, and the risk it poses:
 * under an `allkeys-*` policy a full Redis evicts any key, overrides (a `{ block: true }` has no
 * expiry) and their registry included, so a blocked key is let through again without a word.
 * `volatile-*` policies evict only keys with an expiry (limiter state, never an override without
 * a ttl); `noeviction` refuses writes instead (then a key over its limit stays denied, see
 * batch.ts). Read through the client's public methods; a user whose ACL denies CONFIG, a
 * proxy, or a client this module does not know is simply not inspected.
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

/**
 * The policies of every node, in no order (call it once the client is connected); empty when they
 * cannot be read (ACL, proxy, a client of another kind).
 */
export async function readMemoryPolicies(client: unknown): Promise<string[]> {
  try {
    const readers = await policyReaders(client);
    const replies = await Promise.all(readers.map((read) => read('GET', 'maxmemory-policy')));
    // ioredis: ['maxmemory-policy', 'noeviction']; node-redis: ['noeviction'].
    return replies.map((reply) => String(Array.isArray(reply) ? reply[reply.length - 1] : reply));
  } catch {
    return [];
  }
}

/** The warning for the policies read, if any of them evicts keys without an expiry. */
export function memoryPolicyWarnings(policies: readonly string[]): StoreWarning[] {
  const evicting = [...new Set(policies.filter((policy) => policy.startsWith('allkeys-')))];
  if (evicting.length === 0) return [];
  return [
    {
      code: 'maxmemory-policy',
      message: `Redis maxmemory-policy is ${evicting.join(', ')}: when Redis is full it may evict any key, including overrides (a block set with setOverride) and limiter state, letting blocked and limited keys through again; use noeviction (or a volatile-* policy, which evicts only keys with an expiry)`,
    },
  ];
}
