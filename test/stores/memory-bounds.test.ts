/**
 * The memory store is bounded: at most `maxKeys` rule states whatever arrives, expired state
 * is reclaimed as writes arrive (no timers), and the least recently used state goes first, so
 * a key in constant use keeps its state through a flood of others.
 */
import { describe, expect, it, vi } from 'vitest';
import { createLimiter, memoryStore, type RuleOptions } from '../../src/index.js';

const START = 1_700_006_400_000;

function floodable(maxKeys: number, rules: RuleOptions | RuleOptions[]) {
  const clock = { now: START };
  const store = memoryStore({ maxKeys, clock: () => clock.now });
  // No heavy-hitter sketch: it keeps a Map of its own, and these tests pin the store's Map use.
  return { clock, store, limiter: createLimiter({ store, rules, topKeys: 0 }) };
}

describe('memoryStore({ maxKeys })', () => {
  it('never holds more than maxKeys states under a flood of 50k unique keys', async () => {
    const { store, limiter } = floodable(10_000, { algorithm: 'gcra', limit: 10, window: '1h' });
    let largest = 0;
    let admitted = 0;
    for (let i = 0; i < 50_000; i++) {
      if ((await limiter.check(`flood-${i}`)).allowed) admitted++;
      largest = Math.max(largest, store.size);
    }
    expect(admitted).toBe(50_000);
    expect(largest).toBe(10_000);
    expect(store.size).toBe(10_000);
  });

  it('counts one state per key per rule, and still stays within maxKeys', async () => {
    const { store, limiter } = floodable(999, [
      { name: 'a', algorithm: 'sliding-log', limit: 10, window: '1h' },
      { name: 'b', algorithm: 'fixed-window', limit: 10, window: '1h' },
    ]);
    let largest = 0;
    for (let i = 0; i < 5_000; i++) {
      await limiter.check(`flood-${i}`);
      largest = Math.max(largest, store.size);
    }
    expect(largest).toBeLessThanOrEqual(999);
  });

  it('keeps the state of a key in constant use through the flood (least recently used goes first)', async () => {
    const { limiter } = floodable(100, { algorithm: 'fixed-window', limit: 1_000_000, window: '1h' });
    const wrong: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      // Had it been evicted, the count would have started again.
      if ((await limiter.check('hot')).remaining !== 1_000_000 - i - 1) wrong.push(i);
      await limiter.check(`cold-${i}`);
    }
    expect(wrong).toEqual([]);
  });

  it('evicts the least recently used state, not the oldest written', async () => {
    const { limiter } = floodable(3, { algorithm: 'fixed-window', limit: 10, window: '1h' });
    await limiter.check('a');
    await limiter.check('b');
    await limiter.check('c');
    await limiter.peek('a'); // a is now more recently used than b
    await limiter.check('d');
    // A peek shows the state as if it had consumed: 8 means a's one check is remembered.
    expect((await limiter.peek('a')).remaining).toBe(8);
    expect((await limiter.peek('b')).remaining).toBe(9);
  });

  it('reclaims expired state as time advances and writes arrive', async () => {
    const { clock, store, limiter } = floodable(100_000, {
      algorithm: 'token-bucket',
      limit: 5,
      window: 1000,
    });
    for (let i = 0; i < 1_000; i++) await limiter.check(`old-${i}`);
    expect(store.size).toBe(1_000);
    // A token bucket refills one token in 200 ms: by then every old state is as good as none,
    // and a second later (the reclaim delay) it is dropped.
    clock.now += 200 + 999;
    await limiter.check('new-0');
    expect(store.size).toBe(1_001);
    clock.now += 1;
    await limiter.check('new-0');
    expect(store.size).toBe(1);
    // Denials and peeks write nothing, so they reclaim nothing either: no work on the hot path.
    clock.now += 10_000;
    await limiter.peek('new-1');
    expect(store.size).toBe(1);
  });

  it('reclaims expired state gradually when expiries are spread out', async () => {
    const { clock, store, limiter } = floodable(100_000, {
      algorithm: 'sliding-log',
      limit: 5,
      window: 1000,
    });
    for (let i = 0; i < 1_000; i++) {
      clock.now = START + i;
      await limiter.check(`old-${i}`);
    }
    // Those written at +0 .. +500 ms have expired at +1500 ms, and a second later they are
    // dropped; 499 remain, plus the new one.
    clock.now = START + 2500;
    await limiter.check('new');
    expect(store.size).toBe(500);
  });

  it('finds a key whose state was dropped and written again, though limiters keep a handle to it', async () => {
    const rule: RuleOptions = { algorithm: 'fixed-window', limit: 10, window: '1h' };
    const { store, limiter } = floodable(1, rule);
    const other = createLimiter({ store, rules: rule });
    const remaining = async (which: typeof limiter, key: string) => (await which.check(key)).remaining;
    expect(await remaining(limiter, 'a')).toBe(9);
    expect(await remaining(other, 'a')).toBe(8);
    // Evicted by b (maxKeys 1): a starts afresh, and its new state is the one both limiters use.
    expect(await remaining(limiter, 'b')).toBe(9);
    expect(await remaining(limiter, 'a')).toBe(9);
    expect(await remaining(other, 'a')).toBe(8);
    expect(await remaining(limiter, 'a')).toBe(7);
    // Reset through one limiter, then written again through the other.
    await limiter.reset('a');
    expect(await remaining(other, 'a')).toBe(9);
    expect(await remaining(limiter, 'a')).toBe(8);
    expect(store.size).toBe(1);
  });

  it('regression: a full store dropped two keys for one new key (holding maxKeys − 1; with maxKeys 1, none)', async () => {
    const rule: RuleOptions = { algorithm: 'fixed-window', limit: 10, window: '1h' };
    for (const maxKeys of [1, 100]) {
      const { store, limiter } = floodable(maxKeys, rule);
      for (let i = 0; i < 1_000; i++) await limiter.check(`key-${i}`);
      let kept = 0;
      for (let i = 1_000 - maxKeys; i < 1_000; i++)
        if ((await limiter.peek(`key-${i}`)).remaining === 8) kept++;
      expect(kept).toBe(maxKeys);
      expect(store.size).toBe(maxKeys);
    }
  });

  it('regression: every check deleted and re-inserted its key in a Map, O(store size) per check of a hot key', async () => {
    // In V8 each Map delete leaves a tombstone on the key's hash chain until the next rehash, so
    // re-inserting one hot key on every use made each lookup of it walk thousands of them.
    const { store, limiter } = floodable(100_000, { algorithm: 'gcra', limit: 1_000_000, window: '1h' });
    for (let i = 0; i < 1_000; i++) await limiter.check(`other-${i}`);
    const deletes = vi.spyOn(Map.prototype, 'delete');
    try {
      for (let i = 0; i < 100; i++) await limiter.check('hot');
      expect(deletes).not.toHaveBeenCalled();
    } finally {
      deletes.mockRestore();
    }
    expect(store.size).toBe(1_001);
  });

  it('keeps the states of limiters with other prefixes apart under one key, and resets one alone', async () => {
    const store = memoryStore();
    const rules: RuleOptions = { name: 'r', algorithm: 'fixed-window', limit: 10, window: '1h' };
    const a = createLimiter({ store, rules, prefix: 'a' });
    const b = createLimiter({ store, rules, prefix: 'b' });
    // A prefix that ends where another key's head would continue: `a:` + `{b}` is not `a` + `:{b}`.
    const nested = createLimiter({ store, rules, prefix: 'a:' });
    for (let i = 0; i < 3; i++) await a.check('user');
    await b.check('user');
    // A peek shows the state as if it had consumed: 10 − used − 1.
    expect((await a.peek('user')).remaining).toBe(6);
    expect((await b.peek('user')).remaining).toBe(8);
    expect((await nested.peek('user')).remaining).toBe(9);
    expect(store.size).toBe(2);
    await a.reset('user');
    expect((await a.peek('user')).remaining).toBe(9);
    expect((await b.peek('user')).remaining).toBe(8);
    // Settling through one prefix touches only its own state.
    const decision = await b.check('user', { cost: 5 });
    await b.settle(decision, 1);
    expect((await b.peek('user')).remaining).toBe(7);
    expect((await a.peek('user')).remaining).toBe(9);
  });

  it('regression: past 16,384 active keys every check rebuilt its key head and looked the store up by it', async () => {
    // The limiter's head cache (which keeps each key's handle into the store) was cleared each time
    // it reached 16,384 keys, so checks cycling through more keys than that all missed it: 0.36 M
    // checks/s at 100,000 keys against 1.04 M/s with every head kept. It now holds as many keys as
    // the store holds states.
    const { limiter } = floodable(30_000, { algorithm: 'fixed-window', limit: 10, window: '1h' });
    for (let i = 0; i < 20_000; i++) await limiter.check(`key-${i}`);
    const clears = vi.spyOn(Map.prototype, 'clear');
    const sets = vi.spyOn(Map.prototype, 'set');
    try {
      for (let i = 0; i < 20_000; i++) await limiter.check(`key-${i}`);
      expect(clears).not.toHaveBeenCalled();
      expect(sets).not.toHaveBeenCalled();
    } finally {
      clears.mockRestore();
      sets.mockRestore();
    }
  });
});
