/**
 * The Redis store: every rule of one key in one atomic script call, on the Redis server's clock
 * (read in this process, server-clock.ts); checks issued together share that call (batch.ts). How a call reaches Redis (FCALL or EVALSHA,
 * reloads, retries that cannot double count) is calls.ts; the reply's wire format is reply.ts.
 */
import type { ResolvedRule } from '../../base/types.js';
import { describe } from '../../describe.js';
import { checkOptions } from '../../options.js';
import type { EvaluateReceiver, Store } from '../types.js';
import { createBatcher, MAX_BATCH_KEYS } from './batch.js';
import { createScriptCalls } from './calls.js';
import { type RedisClientLike, type ScriptRunner, toScriptRunner } from './client.js';
import { redisLease } from './lease.js';
import {
  memoryPolicyWarnings,
  quotaDurabilityWarnings,
  readServerConfig,
  type ServerConfig,
} from './memory-policy.js';
import { redisOverrides } from './overrides.js';
import { redisQueues } from './queue.js';
import { readinessOf } from './ready.js';
import { redisReservoirs } from './reservoirs.js';
import { describeRules, ruleKeys, settleArgs } from './rule-layout.js';
import { BASE_SCRIPT } from './script.js';
import { createServerClock, SERVER_TIME, STAMP } from './server-clock.js';
import { redisSketches } from './sketches.js';
import { hashSlot } from './slot.js';
import { subscriberOf } from './subscriber.js';

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

/** The options, validated. */
function resolveOptions(options: RedisStoreOptions): {
  runner: ScriptRunner;
  clock: (() => number) | undefined;
  functions: boolean;
} {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`redisStore: expected options { client }, got ${describe(options)}`);
  }
  checkOptions(options, { owner: 'redisStore', expected: 'an options object', known: REDIS_STORE_OPTIONS });
  const runner = toScriptRunner(options.client, 'redisStore client');
  const clock = options.clock;
  if (clock !== undefined && typeof clock !== 'function') {
    throw new TypeError(`redisStore clock: expected a function, got ${describe(clock)}`);
  }
  if (options.functions !== undefined && typeof options.functions !== 'boolean') {
    throw new TypeError(`redisStore functions: expected true or false, got ${describe(options.functions)}`);
  }
  return { runner, clock, functions: options.functions !== false };
}

/**
 * Creates a Redis store.
 * @example
 * import Redis from 'ioredis';
 * const store = redisStore({ client: new Redis(process.env.REDIS_URL) });
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  const { runner, clock, functions } = resolveOptions(options);
  // Until the client first connects, calls wait for it rather than fail (a client without an
  // offline queue would refuse them at once); from then on a disconnection fails them at once.
  const readiness = readinessOf(options.client);
  const { run, send, runReadOnly } = createScriptCalls(runner, readiness, functions);
  const now = (): string => (clock === undefined ? SERVER_TIME : String(clock()));
  /** The caller's clock, around which calendar rules' periods are sent (the script picks the server's). */
  const callerNow = (): number => (clock === undefined ? Date.now() : clock());
  // Checks on the server's clock carry its time as this process reads it, sparing the script a
  // TIME call; not on a cluster, whose nodes each keep their own clock.
  const serverClock =
    clock === undefined && runner.partitioned !== true && runner.time !== undefined
      ? createServerClock(() => (runner.time as NonNullable<ScriptRunner['time']>)(), options.client)
      : undefined;

  /** A call about an admitted request ('s' settle, 'f' release, 'n' renew), given its rules' tokens. */
  function afterCheck(
    mode: 's' | 'f' | 'n',
    head: string,
    rules: readonly ResolvedRule[],
    reserved: number,
    actual: number,
    tokens: readonly number[],
    refund = false,
  ): Promise<unknown> {
    const at = callerNow();
    const perRule = rules.flatMap((rule, i) => settleArgs(rule, tokens[i] as number, at, refund));
    const args = [mode, String(reserved), now(), String(actual), String(rules.length), ...perRule];
    const described = describeRules(rules);
    return run(described.script, ruleKeys(head, described), args);
  }
  const shardOf = runner.partitioned === true ? hashSlot : undefined;
  const batcher = createBatcher(send, shardOf, runReadOnly, serverClock?.stamp);

  /** Queues one check for the next call (see batch.ts); its answer goes to `receiver`. */
  function enqueue(
    head: string,
    rules: readonly ResolvedRule[],
    cost: number,
    consume: boolean,
    overrideSeen: string | undefined,
    receiver: EvaluateReceiver,
  ): void {
    const described = describeRules(rules);
    batcher.enqueue({
      head,
      script: described.script,
      // Stamped as its call is sent, where its rules allow (gcra, sliding-log and concurrency
      // keep no time of their key: a stamp behind it would decide them a little early).
      now: clock === undefined && described.stamped ? STAMP : now(),
      keys: ruleKeys(head, described),
      ruleSet: described.ruleSetAt === undefined ? described.ruleSet : described.ruleSetAt(callerNow()),
      mode: consume ? 'c' : 'p',
      cost,
      seen: overrideSeen ?? '*',
      ruleCount: rules.length,
      receiver,
    });
  }
  // Read once, when first asked (a limiter asks as it is created): see memory-policy.ts.
  let inspected: Promise<ServerConfig> | undefined;

  return {
    kind: 'redis',
    ready: () => readiness.whenReady(),
    ...(clock === undefined ? {} : { clock }),
    ...(shardOf === undefined ? {} : { shardOf }),
    evaluate(head, rules, cost, consume, overrideSeen) {
      return new Promise((resolve, reject) => {
        enqueue(head, rules, cost, consume, overrideSeen, { answered: resolve, failed: reject });
      });
    },
    evaluateWith: enqueue,
    lease: redisLease(run, now),
    queues: redisQueues(run, now, subscriberOf(options.client)),
    sketches: redisSketches(run, now),
    reservoirs: redisReservoirs(run, now),
    async settle(head, rules, reserved, actual, tokens, refund) {
      await afterCheck('s', head, rules, reserved, actual, tokens, refund);
    },
    async slots(head, rules, cost, tokens, action) {
      return Number(await afterCheck(action === 'release' ? 'f' : 'n', head, rules, cost, 0, tokens));
    },
    inspect(needs) {
      // Once connected (a limiter is often created before its client is), never forcing a lazy client to connect.
      inspected ??= readiness.whenConnected().then(
        () => readServerConfig(options.client),
        () => ({ policies: [], persists: [] }),
      );
      return inspected.then((config) => [
        ...memoryPolicyWarnings(config),
        ...(needs?.calendar === true ? quotaDurabilityWarnings(config) : []),
      ]);
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
      const [override, ...keys] = ruleKeys(head, {
        suffixes: deleted,
        blockSuffixes: describeRules(rules).blockSuffixes,
      });
      for (let from = 0; from < keys.length; from += MAX_BATCH_KEYS) {
        await run(BASE_SCRIPT, [override as string, ...keys.slice(from, from + MAX_BATCH_KEYS)], ['r']);
      }
    },
    ...redisOverrides(run, now),
  };
}
