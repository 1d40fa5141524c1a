/**
 * The Redis store: every rule of one key in one atomic script call, on the Redis server's clock;
 * checks issued together share that call (see batch.ts).
 * On Redis 7+ (and Valkey) the script is a function library, loaded once (on every master of a
 * cluster) and called by name (FCALL): a call then runs only the operation, not the script's
 * whole body. Where the library is missing (restart, FUNCTION FLUSH, a new node) it is loaded
 * again; where functions cannot be used (Redis 6, an ACL without FCALL or FUNCTION, a proxy) the
 * store falls back to EVALSHA for good. By SHA, only when the server answers NOSCRIPT is the
 * script sent in full (which also caches it again). On a cluster, a TRYAGAIN answer (the key's
 * slot is mid-migration) is retried after a short pause. All these answers mean the script did
 * not run; any other failure is passed on and never replayed, because a call that timed out or
 * failed may already have been applied.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RAW_FIELDS } from '../../core/decision.js';
import { keyHead } from '../../core/key-encoding.js';
import type { ResolvedRule } from '../../core/types.js';
import { describe } from '../../describe.js';
import { StoreClosedError } from '../../errors.js';
import { checkOptions } from '../../options.js';
import type { Store, StoredOverride, StoreWarning } from '../types.js';
import { createBatcher, MAX_BATCH_KEYS } from './batch.js';
import {
  isFunctionMissingError,
  isFunctionsUnavailableError,
  isNoScriptError,
  isTryAgainError,
  type RedisClientLike,
  type ScriptRunner,
  toScriptRunner,
} from './client.js';
import { overrideKey, overrideRegistryKey } from './key-layout.js';
import { memoryPolicyWarnings, readMemoryPolicies } from './memory-policy.js';
import { readinessOf } from './ready.js';
import { BASE_SCRIPT, type Script, scriptFor } from './script.js';
import { hashSlot } from './slot.js';

export interface RedisStoreOptions {
  /** An ioredis `Redis`/`Cluster`, an iovalkey client, a node-redis client or cluster, or a `ScriptRunner`. */
  client: RedisClientLike;
  /**
   * Use this clock (ms since the epoch) instead of the Redis server's `TIME`. Only for tests and
   * simulations: in production every gateway must share the server's clock.
   */
  clock?: () => number;
  /**
   * Run the script as a Redis function (FUNCTION LOAD once, then FCALL) where the server allows
   * it, falling back to EVALSHA where it does not. Default true. False: EVALSHA only, and no
   * library is ever loaded on the server.
   */
  functions?: boolean;
}

const REDIS_STORE_OPTIONS = new Set(['client', 'clock', 'functions']);

/** A Redis store, which can tell when it is able to answer. */
export interface RedisStore extends Store {
  /**
   * Resolves once the store can answer: its client is connected (an ioredis `lazyConnect` client
   * is told to connect). Rejects if the client is closed first. Checks issued before then wait
   * for the connection, within the limiter's `timeout`.
   * @example
   * const store = redisStore({ client });
   * await store.ready();
   */
  ready(): Promise<void>;
}

/**
 * TRYAGAIN retries: pauses of 10, 20, 40, 80 and 160 ms, about as long as a slot migration takes
 * to move one key's few entries. A migration that takes longer surfaces as an error.
 */
const TRYAGAIN_RETRIES = 5;
const TRYAGAIN_FIRST_DELAY_MS = 10;

/** A function call that did not run (no function, or none allowed): go by EVALSHA. */
const NOT_RUN: unique symbol = Symbol('floodgate.notRun');

/** What the script needs to know of one rule list (keys, script, rule set), computed once per list. */
const describedRules = new WeakMap<
  readonly ResolvedRule[],
  { suffixes: string[][]; script: Script; ruleSet: string }
>();

/** Each script as seen through its library's no-writes function (see runReadOnly). */
const readOnlyViews = new WeakMap<Script, Script>();

function ruleArgs(rule: ResolvedRule, token: number): string[] {
  return [rule.algorithm.code, rule.limit, rule.windowMs, rule.capacity, token].map(String);
}

function describeRules(rules: readonly ResolvedRule[]) {
  let described = describedRules.get(rules);
  if (described === undefined) {
    described = {
      suffixes: rules.map((rule) =>
        rule.algorithm.keySuffixes.map((suffix: string) => rule.keyTail + suffix),
      ),
      script: scriptFor(rules.map((rule) => rule.algorithm.code)),
      ruleSet: rules
        .map((rule) => `${rule.algorithm.code},${rule.limit},${rule.windowMs},${rule.capacity}`)
        .join(';'),
    };
    describedRules.set(rules, described);
  }
  return described;
}

/** The key's override key first, then every rule's keys. */
function ruleKeys(head: string, suffixes: string[][]): string[] {
  const keys: string[] = [overrideKey(head)];
  for (const list of suffixes) for (const suffix of list) keys.push(head + suffix);
  return keys;
}

/**
 * Creates a Redis store.
 * @example
 * import Redis from 'ioredis';
 * const store = redisStore({ client: new Redis(process.env.REDIS_URL) });
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`redisStore: expected options { client }, got ${describe(options)}`);
  }
  checkOptions(options, { owner: 'redisStore', expected: 'an options object', known: REDIS_STORE_OPTIONS });
  const runner: ScriptRunner = toScriptRunner(options.client, 'redisStore client');
  const clock = options.clock;
  if (clock !== undefined && typeof clock !== 'function') {
    throw new TypeError(`redisStore clock: expected a function, got ${describe(clock)}`);
  }
  if (options.functions !== undefined && typeof options.functions !== 'boolean') {
    throw new TypeError(`redisStore functions: expected true or false, got ${describe(options.functions)}`);
  }
  // Turned off for good the first time the server or the user's ACL refuses functions.
  let functions =
    options.functions !== false && runner.fcall !== undefined && runner.loadLibrary !== undefined;

  // Until the client first connects, calls wait for it rather than fail (a client without an
  // offline queue would refuse them at once); from then on a disconnection fails them at once.
  const readiness = readinessOf(options.client);

  // Full sends of a script in flight, by SHA: after a restart or SCRIPT FLUSH, the calls that all
  // met NOSCRIPT at once wait for one send instead of each sending the whole script.
  const sending = new Map<string, Promise<unknown>>();

  // Library loads in flight, by name: the calls that all met "Function not found" at once wait
  // for one load.
  const loading = new Map<string, Promise<boolean>>();

  /** Loads the script's library; false when it could not be loaded (the call falls back to EVALSHA). */
  function loadLibrary(script: Script): Promise<boolean> {
    let load = loading.get(script.functionName);
    if (load === undefined) {
      load = (runner.loadLibrary as (code: string) => Promise<void>)(script.library).then(
        () => true,
        (error: unknown) => {
          if (isFunctionsUnavailableError(error)) functions = false;
          return false;
        },
      );
      loading.set(script.functionName, load);
      load.finally(() => loading.delete(script.functionName));
    }
    return load;
  }

  /**
   * FCALL, loading the library where it is missing. Resolves NOT_RUN when the function could not
   * be called (nothing ran): the caller then goes by EVALSHA.
   */
  async function callFunction(script: Script, keys: string[], args: string[]): Promise<unknown> {
    const fcall = runner.fcall as NonNullable<ScriptRunner['fcall']>;
    for (let loaded = false; ; loaded = true) {
      try {
        return await fcall(script.functionName, keys, args);
      } catch (error) {
        if (isFunctionsUnavailableError(error)) {
          functions = false;
          return NOT_RUN;
        }
        if (!isFunctionMissingError(error)) throw error;
      }
      // Loaded and still missing: the key's node was not among the masters the client knew.
      if (loaded || !(await loadLibrary(script))) return NOT_RUN;
    }
  }

  async function runOnce(script: Script, keys: string[], args: string[]): Promise<unknown> {
    if (functions) {
      const reply = await callFunction(script, keys, args);
      if (reply !== NOT_RUN) return reply;
    }
    try {
      return await runner.evalSha(script.sha, keys, args);
    } catch (error) {
      if (!isNoScriptError(error)) throw error;
    }
    // NOSCRIPT means the script never ran: running it again cannot count a request twice.
    const inFlight = sending.get(script.sha);
    if (inFlight !== undefined) {
      await inFlight.catch(() => undefined);
      try {
        return await runner.evalSha(script.sha, keys, args);
      } catch (error) {
        // Another cluster node may still lack it: send it in full below.
        if (!isNoScriptError(error)) throw error;
      }
    }
    const send = runner.eval(script.text, keys, args);
    sending.set(script.sha, send);
    try {
      return await send;
    } finally {
      if (sending.get(script.sha) === send) sending.delete(script.sha);
    }
  }

  async function run(script: Script, keys: string[], args: string[]): Promise<unknown> {
    if (!readiness.ready) await readiness.beforeCall();
    for (let attempt = 0; ; attempt++) {
      try {
        return await runOnce(script, keys, args);
      } catch (error) {
        if (runner.closed?.() === true) throw new StoreClosedError('redis', error);
        // TRYAGAIN also means the script never ran, so running it again cannot double count.
        if (!isTryAgainError(error) || attempt >= TRYAGAIN_RETRIES) throw error;
        await sleep(TRYAGAIN_FIRST_DELAY_MS * 2 ** attempt);
      }
    }
  }

  /**
   * A call Redis runs even while it refuses writes: by the library's no-writes function (a
   * function that may write is refused before it runs), or by EVALSHA (a script is refused only
   * at its first write, and peeks write nothing).
   */
  function runReadOnly(script: Script, keys: string[], args: string[]): Promise<unknown> {
    let view = readOnlyViews.get(script);
    if (view === undefined) {
      view = { ...script, functionName: script.readOnlyFunctionName };
      readOnlyViews.set(script, view);
    }
    return run(view, keys, args);
  }

  const now = (): string => (clock === undefined ? '-1' : String(clock()));

  /** A call about an admitted request ('s' settle, 'f' release, 'n' renew), given its rules' tokens. */
  function afterCheck(
    mode: 's' | 'f' | 'n',
    head: string,
    rules: readonly ResolvedRule[],
    reserved: number,
    actual: number,
    tokens: readonly number[],
  ): Promise<unknown> {
    const perRule = rules.flatMap((rule, i) => ruleArgs(rule, tokens[i] as number));
    const args = [mode, String(reserved), now(), String(actual), String(rules.length), ...perRule];
    const described = describeRules(rules);
    return run(described.script, ruleKeys(head, described.suffixes), args);
  }
  const shardOf = runner.partitioned === true ? hashSlot : undefined;
  const batcher = createBatcher(run, shardOf, runReadOnly);
  // Read once, when first asked (a limiter asks as it is created): see memory-policy.ts.
  let inspected: Promise<readonly StoreWarning[]> | undefined;

  return {
    kind: 'redis',
    ready: () => readiness.whenReady(),
    ...(clock === undefined ? {} : { clock }),
    ...(shardOf === undefined ? {} : { shardOf }),
    async evaluate(head, rules, cost, consume, overrideSeen) {
      const described = describeRules(rules);
      const seen = overrideSeen ?? '*';
      const reply = await batcher.enqueue({
        head,
        script: described.script,
        now: now(),
        keys: ruleKeys(head, described.suffixes),
        ruleSet: described.ruleSet,
        mode: consume ? 'c' : 'p',
        cost,
        seen,
      });
      if (Array.isArray(reply) && reply[0] === 'override' && reply.length === 2) {
        const value = String(reply[1]);
        return { overrideChanged: true, value: value === '' ? undefined : value };
      }
      const expected = rules.length * RAW_FIELDS + (seen === '*' || seen === '' ? 0 : 1);
      if (!Array.isArray(reply) || reply.length !== expected) {
        throw new Error(`floodgate: unexpected reply from the Redis script: ${describe(reply)}`);
      }
      return reply as number[];
    },
    async settle(head, rules, reserved, actual, tokens) {
      await afterCheck('s', head, rules, reserved, actual, tokens);
    },
    async slots(head, rules, cost, tokens, action) {
      return Number(await afterCheck(action === 'release' ? 'f' : 'n', head, rules, cost, 0, tokens));
    },
    inspect() {
      // Once connected (a limiter is often created before its client is), never forcing a lazy client to connect.
      inspected ??= readiness
        .whenConnected()
        .then(
          () => readMemoryPolicies(options.client),
          () => [],
        )
        .then(memoryPolicyWarnings);
      return inspected;
    },
    async reset(head, rules) {
      // Every plan's rules at once can be many keys: in calls of a bounded size, each led by the
      // override key the script skips. A slot rule's last id is kept (see Algorithm.slots.reset).
      const deleted = rules.map((rule) => {
        const { keySuffixes, slots } = rule.algorithm;
        return (slots === undefined ? keySuffixes : keySuffixes.slice(0, -1)).map(
          (suffix: string) => rule.keyTail + suffix,
        );
      });
      const [override, ...keys] = ruleKeys(head, deleted);
      for (let from = 0; from < keys.length; from += MAX_BATCH_KEYS) {
        await run(BASE_SCRIPT, [override as string, ...keys.slice(from, from + MAX_BATCH_KEYS)], ['r']);
      }
    },
    async setOverride(prefix, key, value, ttlMs) {
      const expiresAt = await run(
        BASE_SCRIPT,
        [overrideKey(keyHead(prefix, key))],
        ['o', String(ttlMs ?? 0), now(), value],
      );
      // The key's own copy is the truth checks read; the registry only lists it.
      await run(BASE_SCRIPT, [overrideRegistryKey(prefix)], ['g', key, '', `${expiresAt}:${value}`]);
    },
    async clearOverride(prefix, key) {
      await run(BASE_SCRIPT, [overrideKey(keyHead(prefix, key))], ['x']);
      await run(BASE_SCRIPT, [overrideRegistryKey(prefix)], ['d', key]);
    },
    async listOverrides(prefix) {
      const reply = await run(BASE_SCRIPT, [overrideRegistryKey(prefix)], ['l', '', now()]);
      if (!Array.isArray(reply) || reply.length % 3 !== 0) {
        throw new Error(`floodgate: unexpected reply from the Redis script: ${describe(reply)}`);
      }
      const list: StoredOverride[] = [];
      for (let i = 0; i < reply.length; i += 3) {
        const remaining = Number(reply[i + 1]);
        list.push({
          key: String(reply[i]),
          value: String(reply[i + 2]),
          expiresInMs: remaining < 0 ? undefined : remaining,
        });
      }
      return list;
    },
  };
}
