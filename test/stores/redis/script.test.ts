/**
 * The one check script: its SHA is pinned so an edit is always deliberate; it runs as a Redis
 * function where the server allows it and by EVALSHA where it does not; it survives the server
 * forgetting it (FUNCTION FLUSH, NOSCRIPT) without counting anything twice, and no call is ever
 * re-sent after any other failure, since such a call may already have been applied.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../../../src/algorithms/index.js';
import {
  createLimiter,
  type Limiter,
  type RedisStoreOptions,
  redisStore,
  type ScriptRunner,
} from '../../../src/index.js';
import { CHECK_SCRIPT, CHECK_SCRIPT_SHA, scriptFor } from '../../../src/stores/redis/script.js';
import {
  commandCalls,
  type NodeRedisClient,
  useRedisServerWithNodeRedis,
} from '../../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

const PINNED_SHA = '4a82bdd5042a37b110ebbffb364082c6da93c92f';

let ioredis: Redis;
let nodeRedis: NodeRedisClient;
let keys = 0;

useRedisServerWithNodeRedis((started) => {
  ioredis = started.client;
  nodeRedis = started.nodeRedis;
});

interface Calls {
  evalSha: number;
  eval: number;
  fcall?: number;
  loadLibrary?: number;
}

/**
 * A ScriptRunner over a real ioredis client that counts calls. `fail` decides per call whether
 * to fail it, and whether the failure happens before the call reaches Redis or after Redis
 * has applied it (as a timeout would). With `functions`, it also calls and loads functions;
 * `fcallCommand` names the command it sends for FCALL (an unknown one gets Redis's real error).
 */
function countingRunner(
  fail: (call: number) => 'before' | 'after' | undefined = () => undefined,
  functions?: { fcallCommand: string },
) {
  const calls: Calls = functions
    ? { evalSha: 0, eval: 0, fcall: 0, loadLibrary: 0 }
    : { evalSha: 0, eval: 0 };
  let call = 0;
  async function send(run: () => Promise<unknown>): Promise<unknown> {
    const failure = fail(call++);
    if (failure === 'before') throw new Error('ECONNRESET injected before sending');
    const reply = await run();
    if (failure === 'after') throw new Error('Command timed out (injected after Redis applied it)');
    return reply;
  }
  const runner: ScriptRunner = {
    evalSha(sha, keys, args) {
      calls.evalSha++;
      return send(() => ioredis.evalsha(sha, keys.length, ...keys, ...args));
    },
    eval(script, keys, args) {
      calls.eval++;
      return send(() => ioredis.eval(script, keys.length, ...keys, ...args));
    },
    ...(functions && {
      fcall(name, keys, args) {
        calls.fcall = (calls.fcall ?? 0) + 1;
        return send(() => ioredis.call(functions.fcallCommand, name, keys.length, ...keys, ...args));
      },
      async loadLibrary(code) {
        calls.loadLibrary = (calls.loadLibrary ?? 0) + 1;
        await ioredis.call('FUNCTION', 'LOAD', 'REPLACE', code);
      },
    }),
  };
  return { runner, calls };
}

function limiterOn(
  client: ScriptRunner | Redis | NodeRedisClient,
  options: Omit<RedisStoreOptions, 'client'> = {},
): Limiter {
  return createLimiter({
    timeout: SLOW_MACHINE_TIMEOUT,
    store: redisStore({ ...options, client }),
    prefix: 'script',
    rules: [
      { name: 'log', algorithm: 'sliding-log', limit: 10, window: '1h' },
      { name: 'bucket', algorithm: 'token-bucket', limit: 20, window: '1h' },
    ],
  });
}

async function remainingAfterChecks(limiter: Limiter, key: string, checks: number): Promise<number[]> {
  const remaining: number[] = [];
  for (let i = 0; i < checks; i++) {
    const decision = await limiter.check(key);
    expect(decision.allowed).toBe(true);
    remaining.push(decision.remaining);
  }
  return remaining;
}

describe('the check script', () => {
  it('has the pinned SHA (update the pin deliberately when the script changes)', () => {
    expect(
      CHECK_SCRIPT_SHA,
      'the Lua check script changed: review the change, then update PINNED_SHA in test/stores/redis/script.test.ts deliberately',
    ).toBe(PINNED_SHA);
  });

  it('is what Redis itself hashes to that SHA', async () => {
    expect(await ioredis.script('LOAD', CHECK_SCRIPT)).toBe(CHECK_SCRIPT_SHA);
  });
});

describe('as a Redis function', () => {
  /** The script of limiterOn's rules (sliding-log and token-bucket). */
  const limiterScript = scriptFor([ALGORITHMS['sliding-log'].code, ALGORITHMS['token-bucket'].code]);

  it('loads as a library named after the script, with one function of that name', async () => {
    const script = scriptFor([1, 3]);
    expect(script.functionName).toMatch(/^floodgate_[0-9a-f]{20}$/);
    expect(script.functionName).toBe(`floodgate_${script.sha.slice(0, 20)}`);
    expect(await ioredis.call('FUNCTION', 'LOAD', 'REPLACE', script.library)).toBe(script.functionName);
    const listed = (await ioredis.call(
      'FUNCTION',
      'LIST',
      'LIBRARYNAME',
      script.functionName,
    )) as unknown[][];
    expect(JSON.stringify(listed)).toContain(`"name","${script.functionName}"`);
  });

  it.each([
    ['ioredis', () => ioredis],
    ['node-redis', () => nodeRedis],
  ] as const)(
    '%s: checks go by FCALL and survive FUNCTION FLUSH, nothing counted twice',
    async (_name, client) => {
      const limiter = limiterOn(client());
      const key = `fflush-${keys++}`;
      await ioredis.config('RESETSTAT');
      expect(await remainingAfterChecks(limiter, key, 3)).toEqual([9, 8, 7]);
      for (let flush = 0; flush < 3; flush++) {
        await ioredis.call('FUNCTION', 'FLUSH');
        expect(await remainingAfterChecks(limiter, key, 2)).toEqual([6 - 2 * flush, 5 - 2 * flush]);
      }
      // 9 checks, plus one call per flush that found no function; never by EVALSHA or EVAL.
      expect(await commandCalls(ioredis, 'fcall')).toBeGreaterThanOrEqual(9);
      expect(await commandCalls(ioredis, 'evalsha')).toBe(0);
      expect(await commandCalls(ioredis, 'eval')).toBe(0);
      expect(await commandCalls(ioredis, 'function\\|load')).toBeGreaterThanOrEqual(3);
    },
  );

  it('remembers parsed rule sets and checks across calls, past its bound, deciding as if each were parsed anew', async () => {
    // 600 costs, each check's own argument string, with two rule sets: more distinct strings
    // than the library keeps (512), so its table is emptied and refilled on the way.
    const fixed = (name: string, limit: number) =>
      createLimiter({
        timeout: SLOW_MACHINE_TIMEOUT,
        store: redisStore({ client: ioredis }),
        prefix: 'parsed',
        rules: { name, algorithm: 'fixed-window', limit, window: '1h' },
      });
    const sides = [
      { limiter: fixed('small', 10_000_000), limit: 10_000_000, used: 0 },
      { limiter: fixed('large', 20_000_000), limit: 20_000_000, used: 0 },
    ];
    const key = `parsed-${keys++}`;
    await ioredis.config('RESETSTAT');
    for (let cost = 1; cost <= 600; cost++) {
      const side = sides[cost % 2] as (typeof sides)[number];
      const peeked = await side.limiter.peek(key, { cost });
      const checked = await side.limiter.check(key, { cost });
      // What would remain after this request, and what remains after it.
      const left = side.limit - side.used - cost;
      expect([peeked.remaining, checked.remaining]).toEqual([left, left]);
      side.used += cost;
    }
    expect(await commandCalls(ioredis, 'fcall')).toBeGreaterThanOrEqual(1200);
  });

  it('remembers formatted numbers across calls, past its bound, deciding as if each were formatted anew', async () => {
    // A clock 7 ms further on every check: each call writes a ttl of its own, so the library's
    // table of formatted numbers fills (512) and is emptied many times, across 10 windows whose
    // starts it compares as strings with the stored ones.
    let now = 1_700_000_000_000;
    const limiter = createLimiter({
      timeout: SLOW_MACHINE_TIMEOUT,
      store: redisStore({ client: ioredis, clock: () => now }),
      prefix: 'formatted',
      rules: { algorithm: 'fixed-window', limit: 100, window: '1s' },
    });
    const key = `formatted-${keys++}`;
    // Admitted checks by window start.
    const admitted = new Map<number, number>();
    for (let i = 0; i < 1400; i++) {
      now += 7;
      const start = now - (now % 1000);
      if ((await limiter.check(key)).allowed) admitted.set(start, (admitted.get(start) ?? 0) + 1);
    }
    // 142 or 143 checks in each whole 1 s window (the first and last are partial), 100 admitted.
    const whole = [...admitted.values()].slice(1, -1);
    expect(whole).toEqual(Array.from({ length: 8 }, () => 100));
  });

  it('replies exactly each call, whatever the size of the reply before it or a call that failed midway', async () => {
    // The library keeps its reply table from call to call: no entry of an earlier reply may
    // show in a later one. Lone fixed-window checks (7 numbers), a batch, an override mismatch (2).
    const script = scriptFor([ALGORITHMS['fixed-window'].code, ALGORITHMS['sliding-log'].code]);
    await ioredis.call('FUNCTION', 'LOAD', 'REPLACE', script.library);
    const fixed = '1,10,3600000,10,0,0,0,0,0,1';
    const log = '5,10,3600000,10,0,0,0,0,0,1';
    const head = () => `fg:{out-${keys++}}`;
    const call = (keysOf: string[], args: string[]) =>
      ioredis.call('FCALL', script.functionName, keysOf.length, ...keysOf, ...args);
    const lone = async () => {
      const h = head();
      const reply = (await call([`${h}:o`, `${h}:fw`], [`${fixed}|c:1:1:*`])) as number[];
      return [reply.length, reply[0], reply[1], reply[2]];
    };
    expect(await lone()).toEqual([7, 6, 1, 10]);
    const [a, b, c] = [head(), head(), head()];
    const batch = (await call(
      [`${a}:o`, `${a}:fw`, `${b}:o`, `${b}:fw`, `${c}:o`, `${c}:fw`],
      ['b', '3', '-1', '1', fixed, 'c:1:1:*', 'c:1:1:*', 'c:1:1:*'],
    )) as unknown[];
    expect(batch).toHaveLength(21);
    expect(await lone()).toEqual([7, 6, 1, 10]);
    const [d, e, f] = [head(), head(), head()];
    // The third check's log key holds a string: the call fails after two checks filled the reply.
    await ioredis.set(`${f}:log`, 'not a sorted set');
    await expect(
      call(
        [`${d}:o`, `${d}:fw`, `${e}:o`, `${e}:fw`, `${f}:o`, `${f}:log`, `${f}:log:n`],
        ['b', '3', '-1', '2', fixed, log, 'c:1:1:*', 'c:1:1:*', 'c:1:2:*'],
      ),
    ).rejects.toThrow(/WRONGTYPE/);
    expect(await lone()).toEqual([7, 6, 1, 10]);
    const g = head();
    await ioredis.set(`${g}:o`, '0:pro');
    expect(await call([`${g}:o`, `${g}:fw`], ['b', '1', '-1', '1', fixed, 'c:1:1:'])).toEqual([-1, 'pro']);
    expect(await lone()).toEqual([7, 6, 1, 10]);
  });

  it('loads the library once, only when the function is missing', async () => {
    const { runner, calls } = countingRunner(undefined, { fcallCommand: 'FCALL' });
    const limiter = limiterOn(runner);
    const key = `fcounted-${keys++}`;
    await ioredis.call('FUNCTION', 'FLUSH');
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([9]);
    expect(calls).toEqual({ evalSha: 0, eval: 0, fcall: 2, loadLibrary: 1 });
    expect(await remainingAfterChecks(limiter, key, 2)).toEqual([8, 7]);
    expect(calls).toEqual({ evalSha: 0, eval: 0, fcall: 4, loadLibrary: 1 });
  });

  it('with functions: false, never calls or loads a function', async () => {
    const { runner, calls } = countingRunner(undefined, { fcallCommand: 'FCALL' });
    const limiter = limiterOn(runner, { functions: false });
    await ioredis.script('LOAD', limiterScript.text);
    expect(await remainingAfterChecks(limiter, `foff-${keys++}`, 2)).toEqual([9, 8]);
    expect(calls).toEqual({ evalSha: 2, eval: 0, fcall: 0, loadLibrary: 0 });
  });

  it('a server without functions (unknown command): EVALSHA from then on, nothing counted twice', async () => {
    // FCALLX draws Redis's own "unknown command" error, as FCALL does on Redis 6.
    const { runner, calls } = countingRunner(undefined, { fcallCommand: 'FCALLX' });
    const limiter = limiterOn(runner);
    const key = `fnone-${keys++}`;
    expect(await remainingAfterChecks(limiter, key, 3)).toEqual([9, 8, 7]);
    expect(calls).toEqual({ evalSha: 3, eval: 0, fcall: 1, loadLibrary: 0 });
  });

  it.each([
    ['FCALL denied', '-fcall'],
    ['FUNCTION LOAD denied', '-function'],
  ])('an ACL user with %s: EVALSHA from then on, nothing counted twice', async (_name, rule) => {
    const user = `fg-${rule.slice(1)}`;
    await ioredis.call('ACL', 'SETUSER', user, 'reset', 'on', 'nopass', '~*', '&*', '+@all', rule);
    await ioredis.call('FUNCTION', 'FLUSH');
    const limited = ioredis.duplicate({ username: user, password: 'unused' });
    try {
      await ioredis.config('RESETSTAT');
      const limiter = limiterOn(limited);
      const key = `facl-${keys++}`;
      expect(await remainingAfterChecks(limiter, key, 3)).toEqual([9, 8, 7]);
      // The first call met the ACL (or a missing function, whose load the ACL refused); EVAL
      // then cached the script for the rest.
      expect(await commandCalls(ioredis, 'evalsha')).toBe(3);
      expect(await commandCalls(ioredis, 'fcall')).toBe(rule === '-fcall' ? 0 : 1);
    } finally {
      limited.disconnect();
      await ioredis.call('ACL', 'DELUSER', user);
    }
  });

  it('a failure after Redis applied an FCALL: degraded, sent once, counted exactly once', async () => {
    const { runner, calls } = countingRunner((call) => (call === 1 ? 'after' : undefined), {
      fcallCommand: 'FCALL',
    });
    const limiter = limiterOn(runner);
    const key = `fafter-${keys++}`;
    await ioredis.call('FUNCTION', 'LOAD', 'REPLACE', limiterScript.library);
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([9]);
    expect((await limiter.check(key)).degraded).toBe('error');
    expect(calls.fcall).toBe(2);
    expect(calls.evalSha).toBe(0);
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([7]);
  });
});

describe('NOSCRIPT after SCRIPT FLUSH', () => {
  it.each([
    ['ioredis', () => ioredis],
    ['node-redis', () => nodeRedis],
  ] as const)('%s: checks keep working, nothing counted twice', async (_name, client) => {
    const limiter = limiterOn(client(), { functions: false });
    const key = `flush-${keys++}`;
    expect(await remainingAfterChecks(limiter, key, 3)).toEqual([9, 8, 7]);
    for (let flush = 0; flush < 3; flush++) {
      await ioredis.script('FLUSH');
      expect(await ioredis.script('EXISTS', CHECK_SCRIPT_SHA)).toEqual([0]);
      expect(await remainingAfterChecks(limiter, key, 2)).toEqual([6 - 2 * flush, 5 - 2 * flush]);
    }
  });

  it('re-sends the script once, by EVAL, only on NOSCRIPT', async () => {
    const { runner, calls } = countingRunner();
    const limiter = limiterOn(runner);
    const key = `counted-${keys++}`;
    await ioredis.script('FLUSH');
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([9]);
    expect(calls).toEqual({ evalSha: 1, eval: 1 });
    // EVAL cached the script again: the next calls go by SHA alone.
    expect(await remainingAfterChecks(limiter, key, 2)).toEqual([8, 7]);
    expect(calls).toEqual({ evalSha: 3, eval: 1 });
  });
});

describe('other failures are never replayed', () => {
  it('a failure before the call reached Redis: degraded, sent once, nothing consumed', async () => {
    const { runner, calls } = countingRunner((call) => (call === 1 ? 'before' : undefined));
    const limiter = limiterOn(runner);
    const key = `before-${keys++}`;
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([9]);
    expect((await limiter.check(key)).degraded).toBe('error');
    expect(calls).toEqual({ evalSha: 2, eval: 0 });
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([8]);
  });

  it('a failure after Redis applied the call: degraded, sent once, counted exactly once', async () => {
    const { runner, calls } = countingRunner((call) => (call === 1 ? 'after' : undefined));
    const limiter = limiterOn(runner);
    const key = `after-${keys++}`;
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([9]);
    expect((await limiter.check(key)).degraded).toBe('error');
    expect(calls).toEqual({ evalSha: 2, eval: 0 });
    // The failed call was applied once; a retry by the store would have made this 6.
    expect(await remainingAfterChecks(limiter, key, 1)).toEqual([7]);
  });

  it('a Redis error reply other than NOSCRIPT is passed on without EVAL', async () => {
    const { runner, calls } = countingRunner();
    // An unknown algorithm code (the rule set's first code, which leads a lone check's one
    // argument) makes the script fail with an ERR reply.
    const broken: ScriptRunner = {
      evalSha: (sha, keys, args) =>
        runner.evalSha(
          sha,
          keys,
          args.map((arg, i) => (i === 0 ? arg.replace(/^\d+/, '99') : arg)),
        ),
      eval: (script, keys, args) => runner.eval(script, keys, args),
    };
    const errors: unknown[] = [];
    const limiter = limiterOn(broken).on('storeError', (cause) => errors.push(cause));
    expect((await limiter.check(`reply-${keys++}`)).degraded).toBe('error');
    expect(String(errors[0])).toMatch(/ERR /);
    expect(calls).toEqual({ evalSha: 1, eval: 0 });
  });
});
