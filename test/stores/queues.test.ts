/**
 * The scheduler's queue contract (src/stores/queue-types.ts), one specification run against the
 * memory store's queues and the Redis store's (ioredis and node-redis): head order by priority
 * then weighted fair tenants then FIFO, news of a changed head, pauses that only extend, learned
 * budgets counted from their grant; on Redis also liveness (a dead participant's entries are
 * dropped) and expiry on every key.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { memoryStore, redisStore, type Store } from '../../src/index.js';
import type { QueueNews, QueueState } from '../../src/stores/queue-types.js';
import {
  type NodeRedisClient,
  type RedisServer,
  useRedisServerWithNodeRedis,
} from '../support/redis-server.js';

let server: RedisServer;
let client: Redis;
let nodeRedis: NodeRedisClient;
useRedisServerWithNodeRedis((started) => {
  ({ server, client, nodeRedis } = started);
});

let heads = 0;
const freshHead = () => `queues:{k${heads++}}`;

/** A participant with the news it heard. */
function participant(store: Store): { queue: QueueState; news: QueueNews[] } {
  const news: QueueNews[] = [];
  const queue = (store.queues as NonNullable<Store['queues']>)('queues', (item) => news.push(item));
  return { queue, news };
}

/** Takes the head out, granted, until the queue is empty: the entries in the order they ran. */
async function drain(queue: QueueState, head: string, first: string): Promise<string[]> {
  const order: string[] = [];
  let next = first;
  while (next !== '') {
    order.push(next);
    next = (await queue.leave(head, next, true)).turn.head;
  }
  return order;
}

const STORES: [string, () => Store][] = [
  ['memory', () => memoryStore()],
  ['redis (ioredis)', () => redisStore({ client: new Redis(server.port, '127.0.0.1') })],
  ['redis (node-redis)', () => redisStore({ client: nodeRedis })],
];

describe.each(STORES)('queues on the %s store', (_name, makeStore) => {
  it('orders by priority, then tenants by virtual finish time weighted by cost, then FIFO', async () => {
    const { queue } = participant(makeStore());
    const head = freshHead();
    const ids = new Map<string, string>();
    const add = async (name: string, priority: number, tenant: string, cost: number) => {
      const { id, turn } = await queue.enqueue(head, priority, tenant, cost);
      ids.set(id, name);
      return turn;
    };
    const first = await add('a1', 5, 'a', 1);
    expect(first).toMatchObject({ head: [...ids.keys()][0], waitMs: 0, queued: 1 });
    await add('a2', 5, 'a', 1);
    await add('a3', 5, 'a', 1);
    await add('b1', 5, 'b', 2);
    await add('b2', 5, 'b', 2);
    await add('z9', 9, 'a', 1);
    const urgent = await add('u0', 0, 'c', 1);
    expect(urgent.queued).toBe(7);
    const order = await drain(queue, head, urgent.head);
    // a: 0, 1, 2; b: 0, 2 (cost 2); ties fall to the entry queued first.
    expect(order.map((id) => ids.get(id))).toEqual(['u0', 'a1', 'b1', 'a2', 'a3', 'b2', 'z9']);
    await queue.close();
  });

  it('tells every participant when the head changes, and counts grants in the mark', async () => {
    const store = makeStore();
    const one = participant(store);
    const two = participant(store);
    const head = freshHead();
    const first = await one.queue.enqueue(head, 5, '', 3);
    const second = await two.queue.enqueue(head, 5, '', 4);
    const left = await one.queue.leave(head, first.id, true);
    expect(left.mark).toEqual({ grants: 1, units: 3 });
    expect(left.turn).toMatchObject({ head: second.id, queued: 1 });
    await expect.poll(() => two.news.some((n) => n.kind === 'turn' && n.turn.head === second.id)).toBe(true);
    const given = await two.queue.leave(head, second.id, false);
    expect(given.mark).toEqual({ grants: 1, units: 3 });
    expect(given.turn).toMatchObject({ head: '', queued: 0 });
    await Promise.all([one.queue.close(), two.queue.close()]);
  });

  it('a pause only extends, holds the head, and is told to every participant', async () => {
    const store = makeStore();
    const one = participant(store);
    const two = participant(store);
    const head = freshHead();
    // Once its first entry is queued, a participant hears every news about it.
    const waiting = await two.queue.enqueue(head, 5, '', 1);
    expect(waiting.turn.waitMs).toBe(0);
    const until = await one.queue.pause(head, 5_000, 'pause');
    expect(await one.queue.pause(head, 10, 'pause')).toBe(until);
    const turn = await two.queue.turn(head);
    expect(turn.waitMs).toBeGreaterThan(4_000);
    expect(turn.waitMs).toBeLessThanOrEqual(5_000);
    await expect
      .poll(() => two.news.find((n) => n.kind === 'pause'))
      .toMatchObject({ kind: 'pause', head, until, origin: one.queue.id, source: 'pause' });
    await Promise.all([one.queue.close(), two.queue.close()]);
  });

  it('a learned budget holds the head once the grants since its mark spend it; an older one only lowers it', async () => {
    const { queue } = participant(makeStore());
    const head = freshHead();
    const a = await queue.enqueue(head, 5, '', 10);
    const markA = (await queue.leave(head, a.id, true)).mark;
    const b = await queue.enqueue(head, 5, '', 10);
    const markB = (await queue.leave(head, b.id, true)).mark;
    // After b: 25 tokens left. The older response (after a) says 40, which must not hand back 15.
    await queue.learn(head, [
      { name: 'tokens', remaining: 25, resetMs: 60_000, observedAt: Date.now(), mark: markB },
    ]);
    await queue.learn(head, [
      { name: 'tokens', remaining: 40, resetMs: 60_000, observedAt: Date.now(), mark: markA },
    ]);
    const c = await queue.enqueue(head, 5, '', 20);
    expect(c.turn.waitMs).toBe(0);
    await queue.leave(head, c.id, true);
    // 5 left: a job of 10 waits for the reset; one request-budget of 1 left allows one more job.
    const d = await queue.enqueue(head, 5, '', 10);
    expect(d.turn.waitMs).toBeGreaterThan(59_000);
    await queue.leave(head, d.id, false);
    const e = await queue.enqueue(head, 5, '', 5);
    expect(e.turn.waitMs).toBe(0);
    await queue.close();
  });
  it('of two budgets in one upstream window the lower stands, whatever the grant order; a later window replaces it', async () => {
    const { queue } = participant(makeStore());
    const head = freshHead();
    const a = await queue.enqueue(head, 5, '', 1);
    const markA = (await queue.leave(head, a.id, true)).mark;
    const b = await queue.enqueue(head, 5, '', 1);
    const markB = (await queue.leave(head, b.id, true)).mark;
    const observedAt = Date.now();
    // a reached the upstream after b: a's answer says 0 left; b's, read later, still says 1.
    await queue.learn(head, [{ name: 'requests', remaining: 0, resetMs: 60_000, observedAt, mark: markA }]);
    await queue.learn(head, [{ name: 'requests', remaining: 1, resetMs: 60_000, observedAt, mark: markB }]);
    const c = await queue.enqueue(head, 5, '', 1);
    expect(c.turn.waitMs).toBeGreaterThan(59_000);
    // An answer of the next window (its reset a window later) replaces it; one of an earlier window is over.
    await queue.learn(head, [{ name: 'requests', remaining: 5, resetMs: 120_000, observedAt, mark: markA }]);
    await queue.learn(head, [{ name: 'requests', remaining: 0, resetMs: 1_000, observedAt, mark: markB }]);
    // (On Redis, learned budgets travel with the key's next enqueue or leave.)
    const d = await queue.enqueue(head, 5, '', 1);
    expect(d.turn.waitMs).toBe(0);
    await queue.leave(head, d.id, false);
    await queue.leave(head, c.id, false);
    await queue.close();
  });
});

describe('queues on Redis only', () => {
  it("drops a dead participant's entries once its liveness runs out", async () => {
    let now = 1_000_000;
    const store = redisStore({ client: new Redis(server.port, '127.0.0.1'), clock: () => now });
    const dead = participant(store);
    const live = participant(store);
    const head = freshHead();
    const gone = await dead.queue.enqueue(head, 5, '', 1);
    const mine = await live.queue.enqueue(head, 5, '', 1);
    expect((await live.queue.turn(head)).head).toBe(gone.id);
    now += 5_001;
    expect(await live.queue.turn(head)).toMatchObject({ head: mine.id, queued: 1 });
    await live.queue.close();
  });

  it('every key it writes expires', async () => {
    const store = redisStore({ client: new Redis(server.port, '127.0.0.1') });
    const { queue } = participant(store);
    const head = freshHead();
    const { id } = await queue.enqueue(head, 5, 't', 1);
    const { mark } = await queue.leave(head, id, true);
    await queue.learn(head, [
      { name: 'requests', remaining: 5, resetMs: 120_000, observedAt: Date.now(), mark },
    ]);
    await queue.enqueue(head, 5, 't', 1);
    await queue.pause(head, 1_000, 'pause');
    const keys = await client.keys(`${head}:*`);
    expect(keys.sort()).toEqual([`${head}:~b`, `${head}:~h`, `${head}:~q`, `${head}:~t`]);
    for (const key of keys) {
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(120_000);
      expect(ttl).toBeLessThanOrEqual(180_000);
    }
    await queue.close();
  });
});
