/**
 * Physical limits, measured with the same client in the same run: a PING, and an EVALSHA of a
 * script that only returns 1 (the least any one-script limiter can cost). The auto-pipelined
 * EVALSHA shows what batching checks into fewer writes can reach. The string counter is the
 * memory reference: the smallest state a limiter can keep per key.
 */
import { createHash } from 'node:crypto';
import type { Contender, MemoryContender } from './types.js';

const RETURN_ONE = 'return 1';
const RETURN_ONE_SHA = createHash('sha1').update(RETURN_ONE).digest('hex');

export const pingCeiling: Contender = {
  name: 'ceiling: PING',
  short: 'PING',
  role: 'ceiling',
  keyIndependent: true,
  create(client) {
    return async () => (await client.ping()) === 'PONG';
  },
};

function evalshaCeiling(name: string, short: string, autoPipelining: boolean): Contender {
  return {
    name,
    short,
    role: 'ceiling',
    keyIndependent: true,
    clientOptions: autoPipelining ? { enableAutoPipelining: true } : {},
    async create(client) {
      await client.script('LOAD', RETURN_ONE);
      return async () => (await client.evalsha(RETURN_ONE_SHA, 0)) === 1;
    },
  };
}

export const evalshaReturnOne = evalshaCeiling('ceiling: EVALSHA return 1', 'EVALSHA', false);
export const evalshaReturnOnePipelined = evalshaCeiling(
  'ceiling: EVALSHA return 1, ioredis auto-pipelining',
  'EVALSHA pipelined',
  true,
);

/** A plain string counter with an expiry: INCR + PEXPIRE in one script. */
export const stringCounter: Contender = {
  name: 'reference: one string counter (INCR + PEXPIRE)',
  short: 'counter',
  role: 'ceiling',
  create(client, policy) {
    client.defineCommand('benchCounter', {
      numberOfKeys: 1,
      lua: "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n",
    });
    const counter = (client as unknown as Record<string, (key: string, windowMs: number) => Promise<number>>)
      .benchCounter as (key: string, windowMs: number) => Promise<number>;
    return async (key) => (await counter.call(client, `c:{${key}}`, policy.windowMs)) <= policy.limit;
  },
};

/** The in-process ceiling: an async check that does nothing, i.e. the cost of one awaited call. */
export const awaitCeiling: MemoryContender = {
  name: 'ceiling: async () => true',
  short: 'await',
  role: 'ceiling',
  create() {
    return { check: async () => true };
  },
};
