/**
 * The scheduler's queues on Redis (see stores/queue-types.ts): every call is one call of the
 * queue script (queue-script.ts) on the key's hash tag; news comes back over pub/sub on a
 * duplicated connection, one channel per prefix. Replies may hold Buffers (the store's client
 * asks for them): every string is read through String().
 */
import { randomUUID } from 'node:crypto';
import type { GrantMark, ObservedBudget, OpenQueues, QueueNews, QueueTurn } from '../queue-types.js';
import type { Run } from './calls.js';
import { QUEUE_SCRIPT } from './queue-script.js';
import type { Subscribe } from './subscriber.js';

/** Longest a learned budget waits for a call to travel with. */
const LEARN_DELAY_MS = 20;

const keysOf = (head: string): string[] => [`${head}:~q`, `${head}:~h`, `${head}:~t`, `${head}:~b`];

function turnOf(reply: readonly unknown[], from: number): QueueTurn {
  return {
    version: Number(reply[from]),
    head: String(reply[from + 1]),
    waitMs: Number(reply[from + 2]),
    queued: Number(reply[from + 3]),
  };
}

/** A message on the channel, or undefined for one this version does not know. */
export function parseNews(message: string): QueueNews | undefined {
  const parts = message.split('|');
  const [kind, head, a, b, c] = parts;
  if (head === undefined || a === undefined || b === undefined || c === undefined) return undefined;
  if (kind === 't' || kind === 'w') {
    // The head entry holds '|' itself: everything after the fifth field.
    const entry = parts.slice(5).join('|');
    const turn = { version: Number(a), waitMs: Number(b), queued: Number(c), head: entry };
    return { kind: 'turn', head, turn, forced: kind === 'w' };
  }
  if (kind === 'p') {
    return { kind: 'pause', head, until: Number(a), ms: Number(b), origin: c, source: parts[5] ?? '' };
  }
  return undefined;
}

/** The Redis store's `queues`, over its script calls, on its clock (`now`: '-1' for the server's TIME). */
export function redisQueues(run: Run, now: () => string, subscribe: Subscribe | undefined): OpenQueues {
  return function open(prefix, listener) {
    // Never '|', which separates an entry's fields.
    const id = randomUUID().replaceAll('-', '').slice(0, 16);
    const channel = `${prefix}:~queues`;
    // Entries are sent once the subscription is up, so no news about them can be missed.
    const subscribed =
      subscribe?.(channel, (message) => {
        const news = parseNews(message);
        if (news !== undefined) listener(news);
      }).catch(() => undefined) ?? Promise.resolve(undefined);
    const mine = new Map<string, Set<string>>();
    // Budgets observed, by key head: sent with the key's next enqueue or leave (no call of their
    // own in steady state), or on their own after LEARN_DELAY_MS when none comes.
    const pending = new Map<string, ObservedBudget[]>();
    let flushing: ReturnType<typeof setTimeout> | undefined;

    function takePending(head: string): string[] {
      const budgets = pending.get(head) ?? [];
      pending.delete(head);
      const sentAt = Date.now();
      return budgets.flatMap((budget) => [
        budget.name,
        String(budget.remaining),
        String(budget.mark.grants),
        String(budget.mark.units),
        // Its reset counted from when it was read: the script's clock is not this process's.
        String(budget.resetMs - Math.max(0, sentAt - budget.observedAt)),
      ]);
    }

    function flush(): void {
      flushing = undefined;
      for (const head of [...pending.keys()]) call('b', head, ...takePending(head)).catch(() => undefined);
    }

    async function call(mode: string, head: string, ...extra: string[]): Promise<unknown[]> {
      const reply = await run(QUEUE_SCRIPT, keysOf(head), [mode, now(), id, channel, head, ...extra]);
      return Array.isArray(reply) ? reply : [reply];
    }

    return {
      id,
      async enqueue(head, priority, tenant, cost) {
        await subscribed;
        const reply = await call('e', head, String(priority), tenant, String(cost), ...takePending(head));
        const entry = String(reply[0]);
        const own = mine.get(head) ?? new Set<string>();
        mine.set(head, own);
        own.add(entry);
        return { id: entry, turn: turnOf(reply, 1) };
      },
      async leave(head, entry, granted) {
        mine.get(head)?.delete(entry);
        const reply = await call('l', head, entry, granted ? '1' : '0', ...takePending(head));
        const mark: GrantMark = { grants: Number(reply[0]), units: Number(reply[1]) };
        return { mark, turn: turnOf(reply, 2) };
      },
      async turn(head) {
        return turnOf(await call('h', head), 0);
      },
      async wake(head) {
        await call('w', head);
      },
      async pause(head, ms, source) {
        const reply = await call('p', head, String(ms), source);
        return Number(reply[0]);
      },
      async learn(head, budgets) {
        pending.set(head, [...(pending.get(head) ?? []), ...budgets]);
        flushing ??= setTimeout(flush, LEARN_DELAY_MS);
      },
      async close() {
        clearTimeout(flushing);
        flush();
        const entries = [...mine];
        mine.clear();
        await Promise.all(entries.map(([head, ids]) => call('x', head, ...ids)));
        const unsubscribe = await subscribed;
        await unsubscribe?.();
      },
    };
  };
}
