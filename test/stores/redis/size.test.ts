/**
 * No check's answer depends on the size of what shares its script call: batches are split by
 * their keys, the script reads and deletes in slices (Lua's unpack stops at about 8,000 values),
 * and a rule set larger than one call can evaluate is refused when the limiter is created (see
 * test/limiter/validation.test.ts). The same bursts on a Redis Cluster: test/cluster/cluster.test.ts.
 */

import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../../../src/algorithms/index.js';
import { createLimiter, redisStore } from '../../../src/index.js';
import { MAX_RULES } from '../../../src/rules.js';
import { MAX_BATCH_KEYS } from '../../../src/stores/redis/batch.js';
import { scriptFor } from '../../../src/stores/redis/script.js';
import { useRedisServer } from '../../support/redis-server.js';
import { expectExactBursts, limiterOn, manyRules } from '../../support/rule-bound.js';
import { SLOW_MACHINE_TIMEOUT } from '../../support/timeouts.js';

let client: Redis;
useRedisServer((started) => {
  client = started.client;
});

const MODES = [
  ['function', true],
  ['EVALSHA', false],
] as const;

async function countKeys(pattern: string): Promise<number> {
  return (await client.keys(pattern)).length;
}

it('one check of the most rules a limiter accepts fits one call', () => {
  const mostKeysPerRule = Math.max(...Object.values(ALGORITHMS).map((a) => a.keySuffixes.length));
  // The override key, then every rule's keys.
  expect(1 + MAX_RULES * mostKeysPerRule).toBeLessThanOrEqual(MAX_BATCH_KEYS);
});

describe.each(MODES)('through a %s call', (mode, functions) => {
  it('regression: 40 concurrent checks of 260 rules each were all allowed (too many results to unpack)', async () => {
    const store = redisStore({ client, functions });
    await expectExactBursts(limiterOn(store, manyRules('fixed-window', 33, 260), `fw260-${mode}`), 'k');
  });

  it('40 concurrent checks at the bound of 1,000 fixed-window rules are decided exactly', async () => {
    const store = redisStore({ client, functions });
    await expectExactBursts(limiterOn(store, manyRules('fixed-window', 33), `fw1000-${mode}`), 'k');
  });
});

it('40 concurrent checks at the bound of 1,000 sliding-log rules (2,001 keys each) are decided exactly', async () => {
  const store = redisStore({ client });
  await expectExactBursts(limiterOn(store, manyRules('sliding-log', 33), 'sl1000'), 'k');
});

it('one script call of 9,009 keys reads them all (past the ~8,000 values Lua can unpack)', async () => {
  const script = scriptFor([ALGORITHMS['fixed-window'].code]);
  const ruleSet = Array.from(
    { length: 1000 },
    () => `${ALGORITHMS['fixed-window'].code},5,60000,5,0,0,0,0,0,0`,
  ).join(';');
  const keys: string[] = [];
  for (let check = 0; check < 9; check++) {
    keys.push(`raw:{${check}}:o`);
    for (let rule = 0; rule < 1000; rule++) keys.push(`raw:{${check}}:r${rule}`);
  }
  const args = ['b', '9', '-1', '1', ruleSet, ...Array.from({ length: 9 }, () => 'c:1:1:*')];
  const reply = (await client.eval(script.text, keys.length, ...keys, ...args)) as number[];
  expect(reply).toHaveLength(9 * (1 + 6000));
  // Per check: 6,000 numbers, every rule allowed (and so consumed: a key per rule).
  const allowedFlags = reply.filter((_, i) => i % 6001 !== 0 && (i % 6001) % 6 === 1);
  expect(reply.filter((_, i) => i % 6001 === 0)).toEqual(new Array(9).fill(6000));
  expect(allowedFlags).toEqual(new Array(9000).fill(1));
  expect(await countKeys('raw:*')).toBe(9000);
  await client.del(...keys);
});

it('reset() of 3,000 sliding-log rules across plans (6,000 keys) forgets every one of them', async () => {
  const store = redisStore({ client });
  const plans = {
    a: manyRules('sliding-log', 5, MAX_RULES, 'a'),
    b: manyRules('sliding-log', 5, MAX_RULES, 'b'),
    c: manyRules('sliding-log', 5, MAX_RULES, 'c'),
  };
  const limiter = createLimiter({
    plans,
    defaultPlan: 'a',
    store,
    prefix: 'reset3k',
    timeout: SLOW_MACHINE_TIMEOUT,
  });
  for (const plan of ['a', 'b', 'c']) expect((await limiter.check('tenant', { plan })).remaining).toBe(4);
  expect(await countKeys('reset3k:*')).toBe(6000);
  await limiter.reset('tenant');
  expect(await countKeys('reset3k:*')).toBe(0);
  expect((await limiter.check('tenant', { plan: 'b' })).remaining).toBe(4);
});
