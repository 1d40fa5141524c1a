/**
 * Property tests for reserve-then-settle on random sequences of checks, peeks, settles and
 * resets: the Lua settlers decide exactly like their TypeScript specifications (memory vs a real
 * Redis on one fake clock), gcra settles exactly like the token bucket, and refunds never let the
 * exact algorithms admit more than the limit in any window.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  type AlgorithmName,
  createLimiter,
  type Decision,
  type Limiter,
  memoryStore,
  type RuleOptions,
  redisStore,
} from '../../src/index.js';
import { useRedisServer } from '../support/redis-server.js';

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

const BASE = 1_700_006_400_000;
const ALGORITHMS: AlgorithmName[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'sliding-log'];

interface Step {
  delta: number;
  op: 'check' | 'peek' | 'settle' | 'reset';
  cost: number;
  /** For settle: which earlier decision (modulo their number), and its actual cost. */
  pick: number;
  actual: number;
}

const ruleArb = (algorithm: AlgorithmName, name: string): fc.Arbitrary<RuleOptions> =>
  fc
    .record({
      limit: fc.integer({ min: 1, max: 12 }),
      window: fc.constantFrom(7, 1000, 1013, 5000),
      burst: fc.integer({ min: 1, max: 12 }),
    })
    .map(({ limit, window, burst }) =>
      algorithm === 'token-bucket' || algorithm === 'gcra'
        ? { name, algorithm, limit, window, burst }
        : { name, algorithm, limit, window },
    );

const singleRuleArb = (algorithm: AlgorithmName) => ruleArb(algorithm, 'r').map((rule) => [rule]);
const severalRulesArb = fc
  .array(fc.constantFrom(...ALGORITHMS), { minLength: 2, maxLength: 3 })
  .chain((list) => fc.tuple(...list.map((algorithm, i) => ruleArb(algorithm, `r${i}`))));
/** Several rules, any of which may count requests (1 per check, never settled). */
const mixedRulesArb = severalRulesArb.chain((list) =>
  fc.tuple(
    ...list.map((rule) =>
      fc.boolean().map((requests): RuleOptions => (requests ? { ...rule, counts: 'requests' } : rule)),
    ),
  ),
);

function stepsArb(ops: Step['op'][], maxActual = 30): fc.Arbitrary<Step[]> {
  return fc.array(
    fc.record({
      delta: fc.oneof(
        { arbitrary: fc.constant(0), weight: 4 },
        { arbitrary: fc.integer({ min: 1, max: 300 }), weight: 4 },
        { arbitrary: fc.integer({ min: 300, max: 3000 }), weight: 2 },
      ),
      op: fc.constantFrom(...ops),
      cost: fc.integer({ min: 1, max: 13 }),
      pick: fc.nat(),
      // Small actual costs often (refunds), large ones sometimes (charges into debt).
      actual: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: maxActual })),
    }),
    { minLength: 5, maxLength: 40, size: 'max' },
  );
}

/** ioredis wrapped so the script's keys are PERSISTed in the same MULTI: Redis's real clock never expires state the fake clock still needs. */
function persisting(redis: Redis) {
  async function run(command: 'evalsha' | 'eval', body: string, numKeys: number, rest: string[]) {
    const transaction = redis.multi()[command](body, numKeys, ...rest);
    for (const key of rest.slice(0, numKeys)) transaction.persist(key);
    const replies = await transaction.exec();
    const [error, reply] = replies?.[0] ?? [new Error('MULTI aborted'), null];
    if (error) throw error;
    return reply;
  }
  return {
    evalsha: (sha: string, numKeys: number, ...rest: string[]) => run('evalsha', sha, numKeys, rest),
    eval: (script: string, numKeys: number, ...rest: string[]) => run('eval', script, numKeys, rest),
  };
}

/** Runs one step on several limiters alike; returns their decisions (undefined for settle/reset). */
async function play(
  limiters: Limiter[],
  step: Step,
  key: string,
  open: Decision[][],
): Promise<Decision[] | undefined> {
  if (step.op === 'reset') {
    for (const limiter of limiters) await limiter.reset(key);
    return undefined;
  }
  if (step.op === 'settle') {
    if (open[0]?.length === 0) return undefined;
    const index = step.pick % (open[0] as Decision[]).length;
    for (const [i, limiter] of limiters.entries()) {
      const [decision] = (open[i] as Decision[]).splice(index, 1);
      await limiter.settle(decision as Decision, step.actual);
    }
    return undefined;
  }
  const decisions: Decision[] = [];
  for (const [i, limiter] of limiters.entries()) {
    const decision =
      step.op === 'peek'
        ? await limiter.peek(key, { cost: step.cost })
        : await limiter.check(key, { cost: step.cost });
    decisions.push(decision);
    if (step.op === 'check') (open[i] as Decision[]).push(decision);
  }
  return decisions;
}

let run = 0;

describe('settle properties', () => {
  it.each([
    ...ALGORITHMS.map((algorithm) => [algorithm, singleRuleArb(algorithm)] as const),
    ['several rules', severalRulesArb] as const,
    ['several rules, some counting requests', mixedRulesArb] as const,
  ])(
    '%s: Redis settles exactly like the TypeScript specification (memory store), on one clock',
    async (_, rulesArb) => {
      await fc.assert(
        fc.asyncProperty(
          rulesArb,
          stepsArb(['check', 'check', 'check', 'peek', 'settle', 'settle', 'reset']),
          async (rules, steps) => {
            let now = BASE;
            const clock = () => now;
            const options = { rules, prefix: 'prop', denyCache: false as const, timeout: 5000 };
            const memory = createLimiter({ ...options, store: memoryStore({ clock }) });
            const redis = createLimiter({
              ...options,
              store: redisStore({ client: persisting(client), clock }),
            });
            const key = `run-${run++}`;
            const open: Decision[][] = [[], []];
            for (const [index, step] of steps.entries()) {
              now += step.delta;
              const decisions = await play([memory, redis], step, key, open);
              if (decisions !== undefined) expect(decisions[1], `step ${index}`).toEqual(decisions[0]);
            }
          },
        ),
        { numRuns: 80 },
      );
    },
  );

  it('gcra settles exactly like the token bucket', async () => {
    const bucketArb = fc.record({
      limit: fc.integer({ min: 1, max: 12 }),
      window: fc.constantFrom(7, 1000, 1013, 5000),
      burst: fc.integer({ min: 1, max: 12 }),
    });
    await fc.assert(
      fc.asyncProperty(
        bucketArb,
        stepsArb(['check', 'check', 'peek', 'settle', 'reset']),
        async (params, steps) => {
          let now = BASE;
          const make = (algorithm: AlgorithmName) =>
            createLimiter({
              store: memoryStore({ clock: () => now }),
              rules: { name: 'r', algorithm, ...params },
            });
          const limiters = [make('gcra'), make('token-bucket')];
          const open: Decision[][] = [[], []];
          for (const [index, step] of steps.entries()) {
            now += step.delta;
            const decisions = await play(limiters, step, 'k', open);
            if (decisions !== undefined) expect(decisions[0], `step ${index}`).toEqual(decisions[1]);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each(['sliding-log', 'fixed-window'] as const)(
    '%s: refunds never let a window hold more than the limit',
    async (algorithm) => {
      const limitArb = fc.record({
        limit: fc.integer({ min: 1, max: 12 }),
        window: fc.constantFrom(100, 1000, 1013),
      });
      await fc.assert(
        fc.asyncProperty(
          limitArb,
          stepsArb(['check', 'check', 'settle'], 12),
          async ({ limit, window }, steps) => {
            let now = BASE;
            const limiter = createLimiter({
              store: memoryStore({ clock: () => now }),
              rules: { algorithm, limit, window },
            });
            const admitted: { at: number; cost: number; decision: Decision }[] = [];
            const open: Decision[][] = [[]];
            for (const step of steps) {
              now += step.delta;
              if (step.op === 'settle') {
                const list = open[0] as Decision[];
                if (list.length === 0) continue;
                const decision = list[step.pick % list.length] as Decision;
                const entry = admitted.find((candidate) => candidate.decision === decision);
                // Refunds only: the actual cost is at most the reserved one.
                const actual = entry === undefined ? 0 : step.actual % (entry.cost + 1);
                await play([limiter], { ...step, actual, pick: step.pick % list.length }, 'k', open);
                // What the algorithm is meant to have given back: only while the units still count.
                const stillCounted =
                  entry !== undefined &&
                  (algorithm === 'sliding-log'
                    ? now < entry.at + window
                    : Math.floor(now / window) === Math.floor(entry.at / window));
                if (entry !== undefined && stillCounted) entry.cost = actual;
                continue;
              }
              const [decision] = (await play([limiter], step, 'k', open)) as Decision[];
              if (decision?.allowed) admitted.push({ at: now, cost: step.cost, decision });
            }
            for (const { at } of admitted) {
              const inWindow = admitted.filter((other) =>
                algorithm === 'sliding-log'
                  ? other.at > at - window && other.at <= at
                  : Math.floor(other.at / window) === Math.floor(at / window),
              );
              expect(inWindow.reduce((sum, other) => sum + other.cost, 0)).toBeLessThanOrEqual(limit);
            }
          },
        ),
        { numRuns: 300 },
      );
    },
  );
});
