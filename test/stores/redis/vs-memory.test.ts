/**
 * The Lua twins against the TypeScript specifications: random request sequences (one rule or
 * several, checks, peeks and resets) give identical decisions, field by field, from the memory
 * store and from a real Redis, both on the same fake clock.
 *
 * Redis expires keys on its own real clock while this test's clock is fake, so a key written
 * with a 1 ms TTL could vanish between two steps that are 0 fake ms apart. The script runner
 * below therefore persists the keys in the same MULTI as the script call. That also holds the
 * scripts to their TTL contract: state Redis keeps past its TTL must decide exactly like no
 * state, which is what the memory store (which drops it) sees. Real expiry is tested in
 * expiry.test.ts.
 */

import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { createLimiter, type Decision, memoryStore, redisStore } from '../../../src/index.js';
import {
  ALGORITHMS,
  type Rule,
  ruleArb,
  ruleSetArb,
  type Scenario,
  scenarioArb,
} from '../../algorithms/arbitraries.js';
import { persistingIoRedisRunner } from '../../support/persisting-runner.js';
import { useRedisServer } from '../../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

/** Rule sets in which any rule may count requests (1 per check) rather than cost. */
const mixedRuleSets = ruleSetArb().chain((list) =>
  fc.tuple(
    ...list.map((rule) =>
      fc
        .boolean()
        .map(
          (requests): Rule =>
            requests ? { ...rule, options: { ...rule.options, counts: 'requests' } } : rule,
        ),
    ),
  ),
);

/** Runs the script and PERSISTs its keys atomically, so Redis's real clock never expires them. */
const scenarios = fc.oneof(
  scenarioArb(
    fc.constantFrom(...ALGORITHMS).chain((algorithm) => ruleArb(algorithm, 'r').map((rule) => [rule])),
  ),
  scenarioArb(ruleSetArb()),
  scenarioArb(mixedRuleSets),
);

let run = 0;

it('random sequences get identical decisions from memoryStore and redisStore on one clock', async () => {
  await fc.assert(
    fc.asyncProperty(scenarios, async ({ rules, start, steps }: Scenario) => {
      let now = start;
      const clock = () => now;
      const options = { rules: rules.map((rule) => rule.options), prefix: 'rvm' };
      const memory = createLimiter({
        timeout: SLOW_MACHINE_TIMEOUT,
        ...options,
        store: memoryStore({ clock }),
      });
      const redis = createLimiter({
        timeout: SLOW_MACHINE_TIMEOUT,
        ...options,
        store: redisStore({ client: persistingIoRedisRunner(client), clock }),
        // The deny cache answers repeats locally; this compares the stores themselves.
        denyCache: false,
      });
      // A fresh key per run: Redis state outlives the run (it is persisted), memory state does not.
      const key = `run-${run++}`;
      for (const [index, { delta, cost, op }] of steps.entries()) {
        now += delta;
        if (op === 'reset') {
          await Promise.all([memory.reset(key), redis.reset(key)]);
          continue;
        }
        const ask = (limiter: typeof memory): Promise<Decision> =>
          op === 'peek' ? limiter.peek(key, { cost }) : limiter.check(key, { cost });
        const expected = await ask(memory);
        expect(await ask(redis), `step ${index}: ${op} at +${now - start} cost ${cost}`).toEqual(expected);
      }
    }),
    { numRuns: 100 },
  );
});
