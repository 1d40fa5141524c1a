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
import { type Batcher, createBatcher, type QueuedCheck } from '../../../src/stores/redis/batch.js';
import type { Run, Send } from '../../../src/stores/redis/calls.js';
import type { EvaluateReply } from '../../../src/stores/types.js';
import { ALGORITHMS, BASE_TIME, ruleArb, ruleSetArb } from '../../algorithms/arbitraries.js';
import { persistingIoRedisRunner } from '../../support/persisting-runner.js';
import { commandCalls, useRedisServer } from '../../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

/** Queues a check; resolves with what its receiver is given. */
function enqueued(batcher: Batcher, check: Omit<QueuedCheck, 'receiver'>): Promise<EvaluateReply> {
  return new Promise((answered, failed) => batcher.enqueue({ ...check, receiver: { answered, failed } }));
}

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
  // Fewer than 8: from 8 on, a queue is split into two calls (see stores/redis/batch.ts).
  requests: fc.array(request, { minLength: 2, maxLength: 7 }),
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
        // Issued together, with no call in flight: they share a script call.
        const got = await Promise.all(requests.map((one) => ask(redis, one)));
        expect(calls - before, `burst ${index}: one call`).toBe(1);
        expect(got, `burst ${index}`).toEqual(expected);
      }
    }),
    { numRuns: 60 },
  );
});

it('a key checked many times in one call is written twice, first and last, and holds the last state', async () => {
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
    // Seven checks: fewer than 8, so one call (see stores/redis/batch.ts).
    const burst = await Promise.all(Array.from({ length: 7 }, () => limiter.check('hot')));
    expect(burst.map((decision) => decision.remaining)).toEqual([99, 98, 97, 96, 95, 94, 93]);
    expect(await commandCalls(client, 'psetex'), algorithm).toBe(2);
    expect((await limiter.check('hot')).remaining, algorithm).toBe(92);
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

  /** Two checks issued together, answered with `reply`; their outcomes. */
  async function answer(reply: unknown) {
    const batcher = createBatcher(
      sending(async () => reply),
      undefined,
    );
    return Promise.allSettled([enqueued(batcher, check('fg:{a}')), enqueued(batcher, check('fg:{b}'))]);
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

  it('checks issued with no call in flight go together once the issuing code yields; 32 at once; later ones at the end of the turn', async () => {
    const sent: number[] = [];
    const batcher = createBatcher(sending(answering(sent)), undefined);
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < 31; i++) pending.push(enqueued(batcher, check(i)));
    expect(sent).toEqual([]);
    pending.push(enqueued(batcher, check(31)));
    // Sent before this code yields: Redis starts on it while the turn's other callbacks run.
    expect(sent).toEqual([32]);
    for (let i = 32; i < 40; i++) pending.push(enqueued(batcher, check(i)));
    await Promise.resolve();
    // Once it yields, the rest in one call (a call is in flight: not split).
    expect(sent).toEqual([32, 8]);
    // Issued while a call is in flight: they wait for the end of the turn.
    for (let i = 40; i < 50; i++) pending.push(enqueued(batcher, check(i)));
    await Promise.resolve();
    expect(sent).toEqual([32, 8]);
    const replies = await Promise.all(pending);
    // Every call was answered by then: from 8 on, a queue goes in two calls.
    expect(sent).toEqual([32, 8, 5, 5]);
    expect(replies).toHaveLength(50);
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
      enqueued(batcher, at(0, '1000')),
      enqueued(batcher, at(1, '1000')),
      enqueued(batcher, at(2, '1001')),
    ]);
    expect(replies).toHaveLength(3);
    expect(sent.map((call) => call.args)).toEqual([
      ['b', '2', '1000', '1', '1,10,1000,10', 'c:1:1:', 'c:1:1:'],
      ['1,10,1000,10|c:1:1:', '1001'],
    ]);
    expect(sent[1]?.keys).toEqual(['fg:{k2}:override', 'fg:{k2}:r:fw']);
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
    await enqueued(batcher, check(0));
    await enqueued(batcher, { ...check(1), mode: 'p', cost: 2, seen: '*' });
    expect(sent).toEqual([['1,10,1000,10|c:1:1:'], ['1,10,1000,10|p:2:1:*']]);
  });

  it('from 8 on, a queue goes in two calls only while no call of its slot is in flight', async () => {
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
    const enqueue = (from: number) =>
      Array.from({ length: 10 }, (_, i) => enqueued(batcher, check(from + i)));
    const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

    const first = enqueue(0);
    await endOfTurn();
    expect(sent).toEqual(['0:5', '0:5']);
    // Slot 0 has calls in flight: its next queue goes whole, at the end of the turn. Slot 1 has
    // none: split, as soon as this code yields.
    const second = [...enqueue(10), ...enqueue(100)];
    await endOfTurn();
    expect(sent).toEqual(['0:5', '0:5', '1:5', '1:5', '0:10']);
    for (const answer of answers.splice(0)) answer();
    expect(await Promise.all([...first, ...second])).toHaveLength(30);
    // Every call answered: split again.
    const third = enqueue(20);
    await endOfTurn();
    expect(sent.slice(5)).toEqual(['0:5', '0:5']);
    for (const answer of answers.splice(0)) answer();
    await Promise.all(third);
  });
});
