/**
 * The small surface Floodgate needs from a Redis client: run a script by SHA, or by source.
 * ioredis (`Redis`, `Cluster`, and iovalkey, which shares its API) and node-redis
 * (`createClient`, `createCluster`) are adapted here through their public methods only, so
 * neither is a dependency. Anything else can be passed as a ready-made `ScriptRunner`.
 */
import { describe } from '../duration.js';

export interface ScriptRunner {
  /**
   * True when calls are spread over the nodes of a cluster, so that one node's failure is kept
   * apart from the others' (the limiter's circuit breaker is then kept per hash slot).
   */
  readonly partitioned?: boolean;
  evalSha(sha: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
}

/** ioredis / iovalkey: `evalsha(sha, numKeys, ...keys, ...args)`. */
interface IoRedisLike {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
}

/** node-redis v4/v5: `evalSha(sha, { keys, arguments })`. */
interface NodeRedisLike {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** A Redis client Floodgate can use: ioredis, iovalkey, node-redis, or a `ScriptRunner`. */
export type RedisClientLike = IoRedisLike | NodeRedisLike | ScriptRunner;

function hasMethods(client: unknown, ...names: string[]): boolean {
  return (
    typeof client === 'object' &&
    client !== null &&
    names.every((name) => typeof (client as Record<string, unknown>)[name] === 'function')
  );
}

/** Wraps a supported client in a `ScriptRunner`; throws a TypeError naming `client` otherwise. */
export function toScriptRunner(client: unknown, option = 'client'): ScriptRunner {
  if (hasMethods(client, 'evalsha', 'eval')) {
    const io = client as IoRedisLike;
    return {
      partitioned: (client as { isCluster?: unknown }).isCluster === true,
      evalSha: (sha, keys, args) => io.evalsha(sha, keys.length, ...keys, ...args),
      eval: (script, keys, args) => io.eval(script, keys.length, ...keys, ...args),
    };
  }
  // node-redis shares the method names of a ScriptRunner but takes an options object; its
  // clients, clusters and sentinels all have `sendCommand`, which a ScriptRunner need not have.
  if (hasMethods(client, 'evalSha', 'eval', 'sendCommand')) {
    const node = client as NodeRedisLike;
    return {
      // Only node-redis clusters can list their masters.
      partitioned: hasMethods(client, 'getMasters'),
      evalSha: (sha, keys, args) => node.evalSha(sha, { keys: [...keys], arguments: [...args] }),
      eval: (script, keys, args) => node.eval(script, { keys: [...keys], arguments: [...args] }),
    };
  }
  if (hasMethods(client, 'evalSha', 'eval')) return client as ScriptRunner;
  throw new TypeError(
    `${option}: expected an ioredis/iovalkey Redis or Cluster, a node-redis client or cluster, or an object with evalSha(sha, keys, args) and eval(script, keys, args); got ${describe(client)}`,
  );
}

/** Whether an error is Redis saying it does not have the script cached (restart, failover, SCRIPT FLUSH, new node). */
export function isNoScriptError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Whether an error is a cluster node refusing a multi-key call because the keys' slot is being
 * migrated and they are split between two nodes. The script did not run. ioredis and iovalkey
 * retry this themselves (`retryDelayOnTryAgain`); node-redis passes it on.
 */
export function isTryAgainError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('TRYAGAIN');
}
