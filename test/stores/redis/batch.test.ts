/**
 * Checks issued together travel in one script call, which reads every key of the batch with one
 * MGET up front. A key checked several times in one batch must still see its own earlier writes:
 * bursts of concurrent checks and peeks on two keys get exactly the decisions the memory store
 * gives the same requests one by one, in the order they were issued. The batch's one flat reply
 * is split per check, and a malformed one fails every check of its batch.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Evaluation } from '../../../src/algorithms/types.js';
import { createLimiter, type Decision, memoryStore, redisStore } from '../../../src/index.js';
import { createBatcher } from '../../../src/stores/redis/batch.js';
import type { Run, Send } from '../../../src/stores/redis/calls.js';
import { ALGORITHMS, BASE_TIME, ruleArb, ruleSetArb } from '../../algorithms/arbitraries.js';
import { persistingIoRedisRunner } from '../../support/persisting-runner.js';
import { commandCalls, useRedisServer } from '../../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

const request = fc.record({
  key: fc.constantFrom('a', 'b'),
  cost: fc.integer({ min: 1, max: 3 }),
  op: fc.constantFrom('check', 'check', 'peek'),
});
const burst = fc.record({
  delta: fc.integer({ min: 0, max: 1500 }),
  // The first goes alone, at once; the others share one call: from 3, so that call holds several,
  // and up to 8, as a queue is never split while a call of its slot is in flight (see stores/redis/batch.ts).
  requests: fc.array(request, { minLength: 3, maxLength: 8 }),
});
const rules = fc.oneof(
  fc.constantFrom(...ALGORITHMS).chain((algorithm) => ruleArb(algorithm, 'r').map((rule) => [rule])),
  ruleSetArb(),
);

let run = 0;

/** A batcher's send over a plain run function. */
function sending(call: Run): Send {
  return (script, keys, args, answered, failed) => {
    call(script, keys, args).then(answered, failed);
  };
}

it('a burst batched into one call decides like the same requests one by one', async () => {
  await fc.assert(
    fc.asyncProperty(rules, fc.array(burst, { minLength: 1, maxLength: 5 }), async (list, bursts) => {
      let now = BASE_TIME;
      const clock = () => now;
      const options = { rules: list.map((rule) => rule.options), prefix: `batch${run++}` };
      const memory = createLimiter({ ...options, store: memoryStore({ clock }) });
      // Calls that ran: a call refused with NOSCRIPT (the script's first use) and sent again counts once.
      let calls = 0;
      const ran = (reply: unknown) => {
        calls++;
        return reply;
      };
      const runner = persistingIoRedisRunner(client);
      const counted = {
        evalSha: (...args: Parameters<typeof runner.evalSha>) => runner.evalSha(...args).then(ran),
        eval: (...args: Parameters<typeof runner.eval>) => runner.eval(...args).then(ran),
      };
      const redis = createLimiter({
        ...options,
        timeout: SLOW_MACHINE_TIMEOUT,
        store: redisStore({ client: counted, clock }),
        // The deny cache answers repeats locally; this compares the stores themselves.
        denyCache: false,
      });
      for (const [index, { delta, requests }] of bursts.entries()) {
        now += delta;
        const ask = (limiter: typeof memory, { key, cost, op }: (typeof requests)[number]) =>
          op === 'peek' ? limiter.peek(key, { cost }) : limiter.check(key, { cost });
        const expected: Decision[] = [];
        for (const one of requests) expected.push(await ask(memory, one));
        const before = calls;
        // Issued in one turn of the event loop: the first goes at once, the others share a call.
        const got = await Promise.all(requests.map((one) => ask(redis, one)));
        expect(calls - before, `burst ${index}: two calls`).toBe(2);
        expect(got, `burst ${index}`).toEqual(expected);
      }
    }),
    { numRuns: 60 },
  );
});

it('a key checked many times in one call is written twice there, first and last, and holds the last state', async () => {
  const algorithms = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra'] as const;
  for (const algorithm of algorithms) {
    const limiter = createLimiter({
      rules: { name: 'r', algorithm, limit: 100, window: '1h' },
      prefix: `written${run++}`,
      timeout: SLOW_MACHINE_TIMEOUT,
      store: redisStore({ client }),
      denyCache: false,
    });
    await client.config('RESETSTAT');
    // Eight checks: the first alone (one write), then seven in one call (see stores/redis/batch.ts).
    const burst = await Promise.all(Array.from({ length: 8 }, () => limiter.check('hot')));
    expect(burst.map((decision) => decision.remaining)).toEqual([99, 98, 97, 96, 95, 94, 93, 92]);
    expect(await commandCalls(client, 'psetex'), algorithm).toBe(3);
    expect((await limiter.check('hot')).remaining, algorithm).toBe(91);
  }
});

describe('the batch reply', () => {
  const script = {
    text: 'unused',
    sha: 'unused',
    library: 'unused',
    functionName: 'unused',
    readOnlyFunctionName: 'unused',
  };
  const check = (head: string) => ({
    head,
    script,
    now: '-1',
    keys: [`${head}:override`, `${head}:r:fw`],
    ruleSet: '1,10,1000,10',
    mode: 'c',
    cost: 1,
    seen: '',
    ruleCount: 1,
  });

  /**
   * Two checks queued in one turn, answered with `reply`; their outcomes. A first check goes alone
   * and stays unanswered, so the two share the next call.
   */
  async function answer(reply: unknown) {
    let calls = 0;
    const batcher = createBatcher(
      sending(() => (calls++ === 0 ? new Promise<never>(() => undefined) : Promise.resolve(reply))),
      undefined,
    );
    void batcher.enqueue(check('fg:{lead}'));
    return Promise.allSettled([batcher.enqueue(check('fg:{a}')), batcher.enqueue(check('fg:{b}'))]);
  }

  it('is split into each check’s outcomes, or the override it now has', async () => {
    const outcomes = await answer([6, 1, 9, 0, 0, 1000, 0, -1, 'pro']);
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: { outcomes: [new Evaluation(true, 9, 0, 0, 1000, 0)] } },
      { status: 'fulfilled', value: { overrideChanged: true, value: 'pro' } },
    ]);
  });

  it.each([
    ['not an array', 'OK'],
    ['one check short', [6, 1, 9, 0, 0, 1000, 0]],
    ['a count past the end', [6, 1, 9, 0, 0, 1000, 0, 6, 1]],
    ['numbers left over', [6, 1, 9, 0, 0, 1000, 0, -1, '', 7]],
    ['a count that is not one', [6, 1, 9, 0, 0, 1000, 0, 'x', 1]],
  ])('fails every check of the batch when it is malformed: %s', async (_, reply) => {
    for (const outcome of await answer(reply)) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason.message).toMatch(
        /unexpected reply from the Redis script/,
      );
    }
  });
});

describe('when checks are sent', () => {
  const script = {
    text: 'unused',
    sha: 'unused',
    library: 'unused',
    functionName: 'unused',
    readOnlyFunctionName: 'unused',
  };
  const check = (i: number) => ({
    head: `fg:{k${i}}`,
    script,
    now: '-1',
    keys: [`fg:{k${i}}:override`, `fg:{k${i}}:r:fw`],
    ruleSet: '1,10,1000,10',
    mode: 'c',
    cost: 1,
    seen: '',
    ruleCount: 1,
  });

  /** A run answering every call with one allowed outcome per check; `sent` lists each call's count. */
  function answering(sent: number[]) {
    return async (_script: unknown, _keys: readonly string[], args: string[]) => {
      const count = args[0] !== 'b' ? 1 : Number(args[1]);
      sent.push(count);
      return Array.from({ length: count }, () => [6, 1, 9, 0, 0, 1000, 0]).flat();
    };
  }

  it('a check with no call in flight goes at once, alone; a queue of 32 goes at once; the rest at the end of the turn', async () => {
    const sent: number[] = [];
    const batcher = createBatcher(sending(answering(sent)), undefined);
    const pending: Promise<unknown>[] = [batcher.enqueue(check(0))];
    expect(sent).toEqual([1]);
    for (let i = 1; i < 32; i++) pending.push(batcher.enqueue(check(i)));
    expect(sent).toEqual([1]);
    pending.push(batcher.enqueue(check(32)));
    // Sent before this turn ends: Redis starts on it while the turn's other callbacks run.
    expect(sent).toEqual([1, 32]);
    for (let i = 33; i < 80; i++) pending.push(batcher.enqueue(check(i)));
    expect(sent).toEqual([1, 32, 32]);
    const replies = await Promise.all(pending);
    // The calls sent in the turn were answered before its end: the rest goes in two calls (from 8 on).
    expect(sent).toEqual([1, 32, 32, 8, 7]);
    expect(replies).toHaveLength(80);
    for (const reply of replies)
      expect(reply).toEqual({ outcomes: [new Evaluation(true, 9, 0, 0, 1000, 0)] });
  });

  it('a check that read another clock than the queued ones starts the next call; a lone check carries its own keys', async () => {
    const sent: { keys: readonly string[]; args: string[] }[] = [];
    const batcher = createBatcher(
      sending(async (_script, keys, args) => {
        sent.push({ keys, args });
        const checks = args[0] !== 'b' ? 1 : Number(args[1]);
        return Array.from({ length: checks }, () => [6, 1, 9, 0, 0, 1000, 0]).flat();
      }),
      undefined,
    );
    const at = (i: number, now: string) => ({ ...check(i), now });
    const replies = await Promise.all([
      batcher.enqueue(at(0, '1000')),
      batcher.enqueue(at(1, '1000')),
      batcher.enqueue(at(2, '1000')),
      batcher.enqueue(at(3, '1001')),
    ]);
    expect(replies).toHaveLength(4);
    expect(sent.map((call) => call.args)).toEqual([
      ['1,10,1000,10|c:1:1:', '1000'],
      ['b', '2', '1000', '1', '1,10,1000,10', 'c:1:1:', 'c:1:1:'],
      ['1,10,1000,10|c:1:1:', '1001'],
    ]);
    expect(sent[0]?.keys).toEqual(['fg:{k0}:override', 'fg:{k0}:r:fw']);
    expect(sent[2]?.keys).toEqual(['fg:{k3}:override', 'fg:{k3}:r:fw']);
  });

  it('a lone check on the server clock sends one argument: its rule set and check', async () => {
    const sent: string[][] = [];
    const batcher = createBatcher(
      sending(async (_script, _keys, args) => {
        sent.push(args);
        return [6, 1, 9, 0, 0, 1000, 0];
      }),
      undefined,
    );
    await batcher.enqueue(check(0));
    await batcher.enqueue({ ...check(1), mode: 'p', cost: 2, seen: '*' });
    expect(sent).toEqual([['1,10,1000,10|c:1:1:'], ['1,10,1000,10|p:2:1:*']]);
  });

  it('from 8 on, a queue left at the end of a turn goes in two calls only while no call of its slot is in flight', async () => {
    const sent: string[] = [];
    const answers: (() => void)[] = [];
    // Keys k100 and up are in slot 1, the others in slot 0.
    const slotOf = (head: string) => (Number(/k(\d+)/.exec(head)?.[1]) >= 100 ? 1 : 0);
    const batcher = createBatcher(
      sending((_script, keys, args) => {
        const count = args[0] !== 'b' ? 1 : Number(args[1]);
        sent.push(`${slotOf(keys[0] as string)}:${count}`);
        const reply = Array.from({ length: count }, () => [6, 1, 9, 0, 0, 1000, 0]).flat();
        return new Promise((resolve) => answers.push(() => resolve(reply)));
      }),
      slotOf,
    );
    const enqueue = (from: number) => Array.from({ length: 10 }, (_, i) => batcher.enqueue(check(from + i)));
    const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

    // The first check goes alone; its call is answered before the turn ends: the rest is split.
    const first = enqueue(0);
    expect(sent).toEqual(['0:1']);
    answers.shift()?.();
    await endOfTurn();
    expect(sent).toEqual(['0:1', '0:5', '0:4']);
    // Slot 0 has calls in flight: its next queue goes whole. Slot 1 has none: its first check
    // goes alone, and the rest whole, that call being in flight at the turn's end.
    const second = [...enqueue(10), ...enqueue(100)];
    await endOfTurn();
    expect(sent).toEqual(['0:1', '0:5', '0:4', '1:1', '0:10', '1:9']);
    for (const answer of answers.splice(0)) answer();
    expect(await Promise.all([...first, ...second])).toHaveLength(30);
  });
});
