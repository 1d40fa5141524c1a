/**
 * The small surface Floodgate needs from a Redis client: run a script by SHA, or by source.
 * ioredis (`Redis`, `Cluster`, and iovalkey, which shares its API) and node-redis
 * (`createClient`, `createCluster`) are adapted here through their public methods only, so
 * neither is a dependency. Anything else can be passed as a ready-made `ScriptRunner`.
 */
import { describe } from '../../describe.js';

export interface ScriptRunner {
  /**
   * True when calls are spread over the nodes of a cluster, so that one node's failure is kept
   * apart from the others' (the limiter's circuit breaker is then kept per hash slot).
   */
  readonly partitioned?: boolean;
  /** Replies as Redis gives them: integers as numbers, bulk strings as strings or Buffers. */
  evalSha(sha: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * Calls a Redis function (`FCALL`, Redis 7+ and Valkey). Optional: without it, and without
   * `loadLibrary`, the store runs its script by `EVALSHA`.
   */
  fcall?(name: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** Loads a function library (`FUNCTION LOAD REPLACE`) on every node that serves keys (every master of a cluster). */
  loadLibrary?(code: string): Promise<void>;
  /**
   * The server's clock: TIME's reply, `[seconds, microseconds]`. Optional: with it the store
   * stamps checks with the server's time as this process reads it (server-clock.ts); without it
   * the script reads TIME on every call.
   */
  time?(): Promise<unknown>;
  /**
   * True once the client was closed for good by its owner (it will never answer again). Asked only
   * after a call failed, so that failure is reported as a closed store, not a transient error.
   */
  closed?(): boolean;
}

/** ioredis / iovalkey: `evalsha(sha, numKeys, ...keys, ...args)`. */
interface IoRedisLike {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  fcall?(name: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  /** The same commands, replying with Buffers for bulk strings (no conversion pass over the reply). */
  evalshaBuffer?(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  evalBuffer?(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  fcallBuffer?(name: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  call?(command: string, ...args: string[]): Promise<unknown>;
  /** Only on a Cluster: its connections, e.g. to every master. */
  nodes?(role: 'master'): IoRedisLike[];
}

/** node-redis v4/v5: `evalSha(sha, { keys, arguments })`. */
interface NodeRedisLike {
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  fCall?(name: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  functionLoad?(code: string, options: { REPLACE: boolean }): Promise<unknown>;
}

/** node-redis's way to send any command (clients, clusters and sentinels all have it). */
interface NodeRedisCommands {
  sendCommand(args: string[]): Promise<unknown>;
}

/** A node-redis cluster: its masters, and a connected client for one of them. */
interface NodeRedisClusterLike {
  readonly masters?: readonly unknown[];
  getMasters?(): readonly unknown[];
  nodeClient(node: unknown): NodeRedisLike | Promise<NodeRedisLike>;
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

/** FUNCTION LOAD through ioredis: on every master of a Cluster, or on the one server. */
function ioRedisLibraryLoader(
  io: IoRedisLike,
  cluster: boolean,
): ((code: string) => Promise<void>) | undefined {
  if (typeof io.call !== 'function' || (cluster && typeof io.nodes !== 'function')) return undefined;
  return async (code) => {
    const nodes = cluster ? (io.nodes as NonNullable<IoRedisLike['nodes']>)('master') : [io];
    await Promise.all(nodes.map((node) => node.call?.('FUNCTION', 'LOAD', 'REPLACE', code)));
  };
}

/** FUNCTION LOAD through node-redis: on every master of a cluster, or on the one client. */
function nodeRedisLibraryLoader(
  node: NodeRedisLike,
  isCluster: boolean,
): ((code: string) => Promise<void>) | undefined {
  if (typeof node.functionLoad !== 'function') return undefined;
  if (!isCluster) {
    return async (code) => {
      await node.functionLoad?.(code, { REPLACE: true });
    };
  }
  // A cluster that cannot hand out a client per master cannot load on each of them.
  if (!hasMethods(node, 'nodeClient')) return undefined;
  const cluster = node as unknown as NodeRedisClusterLike;
  return async (code) => {
    const masters = cluster.masters ?? cluster.getMasters?.() ?? [];
    await Promise.all(
      masters.map(async (master) => {
        const client = await cluster.nodeClient(master);
        await client.functionLoad?.(code, { REPLACE: true });
      }),
    );
  };
}

/** Wraps a supported client in a `ScriptRunner`; throws a TypeError naming `client` otherwise. */
export function toScriptRunner(client: unknown, option = 'client'): ScriptRunner {
  if (hasMethods(client, 'evalsha', 'eval')) {
    const io = client as IoRedisLike;
    const partitioned = (client as { isCluster?: unknown }).isCluster === true;
    const loadLibrary = ioRedisLibraryLoader(io, partitioned);
    // The Buffer variants where the client has them: the plain ones walk every reply element to
    // turn Buffers into strings, and a check's reply is all integers.
    const evalsha = io.evalshaBuffer ?? io.evalsha;
    const evalScript = io.evalBuffer ?? io.eval;
    const fcall = io.fcallBuffer ?? io.fcall;
    return {
      partitioned,
      // 'end': quit(), disconnect(), or a retryStrategy that gave up; ioredis never reconnects then.
      closed: () => (client as { status?: unknown }).status === 'end',
      evalSha: (sha, keys, args) => evalsha.call(io, sha, keys.length, ...keys, ...args),
      eval: (script, keys, args) => evalScript.call(io, script, keys.length, ...keys, ...args),
      ...(typeof io.call === 'function'
        ? { time: () => (io.call as NonNullable<IoRedisLike['call']>)('TIME') }
        : {}),
      ...(typeof fcall === 'function' && loadLibrary !== undefined
        ? { fcall: (name, keys, args) => fcall.call(io, name, keys.length, ...keys, ...args), loadLibrary }
        : {}),
    };
  }
  // node-redis shares the method names of a ScriptRunner but takes an options object; its
  // clients, clusters and sentinels all have `sendCommand`, which a ScriptRunner need not have.
  if (hasMethods(client, 'evalSha', 'eval', 'sendCommand')) {
    const node = client as NodeRedisLike;
    // Only node-redis clusters can list their masters.
    const partitioned = hasMethods(client, 'getMasters');
    const loadLibrary = nodeRedisLibraryLoader(node, partitioned);
    const fCall = node.fCall;
    return {
      partitioned,
      // False after quit()/close()/destroy() (and before connect()); true while reconnecting.
      closed: () => (client as { isOpen?: unknown }).isOpen === false,
      evalSha: (sha, keys, args) => node.evalSha(sha, { keys: [...keys], arguments: [...args] }),
      eval: (script, keys, args) => node.eval(script, { keys: [...keys], arguments: [...args] }),
      time: () => (node as unknown as NodeRedisCommands).sendCommand(['TIME']),
      ...(typeof fCall === 'function' && loadLibrary !== undefined
        ? {
            fcall: (name, keys, args) => fCall.call(node, name, { keys: [...keys], arguments: [...args] }),
            loadLibrary,
          }
        : {}),
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

/**
 * Whether an error is Redis refusing a write for want of memory (`maxmemory` reached under
 * `noeviction`): before running a function that may write, or at a script's first write (which
 * fails the script before it wrote anything).
 */
export function isOutOfMemoryError(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('OOM ');
}

/** Whether an error is Redis saying it has no function of that name (restart, FUNCTION FLUSH, new node): nothing ran. */
export function isFunctionMissingError(error: unknown): boolean {
  return error instanceof Error && error.message.includes('Function not found');
}

/** How Redis ends an error raised inside a running script or function (after its own message). */
const RAISED_IN_SCRIPT = / script: [^ ,]+, on @user_\w+:\d+\.?$/;

/**
 * Whether an error says this server or user cannot use Redis Functions at all: a server before
 * 7.0 (unknown command), a proxy that does not pass them on, or an ACL that denies FCALL or
 * FUNCTION (NOPERM). The command did not run. An error raised inside the running function
 * (Redis appends "script: <name>, on @user_function:<line>.") is not one of these: the function may have written already,
 * so it must never be run again by EVALSHA.
 */
export function isFunctionsUnavailableError(error: unknown): boolean {
  return (
    error instanceof Error &&
    !RAISED_IN_SCRIPT.test(error.message) &&
    (error.message.startsWith('NOPERM') ||
      /unknown command|unsupported command|not supported/i.test(error.message))
  );
}
