/**
 * The scheduler's queues in this process (see stores/queue-types.ts): the same order, pauses and
 * learned budgets as the Redis queues' script, for schedulers on the memory store. Every
 * participant is in this process, so none can die with entries queued: no liveness is kept.
 */
import {
  type GrantMark,
  type ObservedBudget,
  type OpenQueues,
  PRIORITY_SHIFT,
  type QueueNews,
  type QueueTurn,
  SAME_RESET_MS,
} from '../queue-types.js';

interface Entry {
  readonly id: string;
  readonly seq: number;
  /** priority × PRIORITY_SHIFT + the virtual start time: lower runs first, then lower seq. */
  readonly score: number;
  readonly start: number;
  readonly cost: number;
}

interface Budget {
  readonly remaining: number;
  readonly grants: number;
  readonly units: number;
  readonly resetAt: number;
}

interface KeyQueue {
  /** Sorted by score, then seq. */
  entries: Entry[];
  byId: Map<string, Entry>;
  seq: number;
  /** The virtual start time of the last grant: where a newly active tenant starts. */
  virtual: number;
  /** Each tenant's virtual finish time, while the queue is not empty. */
  tenants: Map<string, number>;
  grants: number;
  units: number;
  pausedUntil: number;
  budgets: Map<string, Budget>;
  version: number;
  head: string;
  /** When the queue last became empty: its state is dropped after IDLE_MS (as the Redis keys expire). */
  idleSince: number;
}

/** An empty key's state (its grant counters, pause and budgets) is kept this long after its last use. */
const IDLE_MS = 60_000;
/** Enqueues between two sweeps of idle keys' states. */
const SWEEP_EVERY = 1_000;

const before = (a: Entry, b: Entry): boolean => a.score < b.score || (a.score === b.score && a.seq < b.seq);

/** The queues of one memory store; `open` is its `Store.queues`. */
export function createMemoryQueues(clock: () => number): OpenQueues {
  const queues = new Map<string, KeyQueue>();
  const listeners = new Set<(news: QueueNews) => void>();
  let participants = 0;
  let enqueues = 0;

  /** Drops the state of keys idle past IDLE_MS whose pause and budgets are over. */
  function sweep(now: number): void {
    for (const [key, queue] of queues) {
      const idle = queue.entries.length === 0 && queue.idleSince + IDLE_MS < now;
      const resets = Math.max(
        queue.pausedUntil,
        ...[...queue.budgets.values()].map((budget) => budget.resetAt),
      );
      if (idle && resets + IDLE_MS < now) queues.delete(key);
    }
  }

  function tell(news: QueueNews): void {
    // On a later microtask, as news from a server would come: never inside the caller's call.
    for (const listener of listeners) queueMicrotask(() => listener(news));
  }

  function queueOf(head: string): KeyQueue {
    let queue = queues.get(head);
    if (queue === undefined) {
      queue = {
        entries: [],
        byId: new Map(),
        seq: 0,
        virtual: 0,
        tenants: new Map(),
        grants: 0,
        units: 0,
        pausedUntil: 0,
        budgets: new Map(),
        version: 0,
        head: '',
        idleSince: 0,
      };
      queues.set(head, queue);
    }
    return queue;
  }

  /** How long a head of `cost` must wait: the pause, or until a spent learned budget resets. */
  function waitOf(queue: KeyQueue, cost: number | undefined, now: number): number {
    if (cost === undefined) return 0;
    let wait = Math.max(0, queue.pausedUntil - now);
    for (const [name, budget] of queue.budgets) {
      if (budget.resetAt <= now) {
        queue.budgets.delete(name);
        continue;
      }
      const requests = name === 'requests';
      const used = requests ? queue.grants - budget.grants : queue.units - budget.units;
      if (budget.remaining - used < (requests ? 1 : cost)) wait = Math.max(wait, budget.resetAt - now);
    }
    return wait;
  }

  /** The turn after a change; news when the head changed. An idle key's state is dropped. */
  function finish(key: string, queue: KeyQueue, forceNews = false): QueueTurn {
    const now = clock();
    const first = queue.entries[0];
    const head = first?.id ?? '';
    const changed = head !== queue.head;
    if (changed) {
      queue.version++;
      queue.head = head;
    } else if (!forceNews) {
      return turnOf(queue, first, now);
    }
    const turn = turnOf(queue, first, now);
    tell({ kind: 'turn', head: key, turn, forced: !changed });
    if (first === undefined) {
      queue.tenants.clear();
      queue.virtual = 0;
      queue.idleSince = now;
    }
    return turn;
  }

  function turnOf(queue: KeyQueue, first: Entry | undefined, now: number): QueueTurn {
    return {
      version: queue.version,
      head: queue.head,
      waitMs: waitOf(queue, first?.cost, now),
      queued: queue.entries.length,
    };
  }

  function insert(queue: KeyQueue, entry: Entry): void {
    const { entries } = queue;
    let low = 0;
    let high = entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (before(entries[mid] as Entry, entry)) low = mid + 1;
      else high = mid;
    }
    entries.splice(low, 0, entry);
    queue.byId.set(entry.id, entry);
  }

  function remove(queue: KeyQueue, entry: Entry): void {
    const index = queue.entries.indexOf(entry);
    if (index >= 0) queue.entries.splice(index, 1);
    queue.byId.delete(entry.id);
  }

  return function open(_prefix, listener) {
    listeners.add(listener);
    const id = `m${++participants}`;
    const mine = new Map<string, Set<string>>();
    return {
      id,
      skip: {
        idle(head, cost) {
          const queue = queues.get(head);
          if (queue === undefined) return true;
          if (queue.entries.length > 0) return false;
          if (queue.pausedUntil === 0 && queue.budgets.size === 0) return true;
          const now = clock();
          return queue.pausedUntil <= now && waitOf(queue, cost, now) === 0;
        },
        granted(head, cost) {
          if (++enqueues % SWEEP_EVERY === 0) sweep(clock());
          const queue = queueOf(head);
          queue.grants++;
          queue.units += cost;
          queue.idleSince = clock();
          return { grants: queue.grants, units: queue.units };
        },
      },
      async enqueue(head, priority, tenant, cost) {
        if (++enqueues % SWEEP_EVERY === 0) sweep(clock());
        const queue = queueOf(head);
        const seq = ++queue.seq;
        const start = Math.max(queue.virtual, queue.tenants.get(tenant) ?? 0);
        queue.tenants.set(tenant, start + cost);
        const entry = { id: `${id}:${seq}`, seq, score: priority * PRIORITY_SHIFT + start, start, cost };
        insert(queue, entry);
        const own = mine.get(head) ?? new Set<string>();
        mine.set(head, own);
        own.add(entry.id);
        return { id: entry.id, turn: finish(head, queue) };
      },
      async leave(head, entryId, granted) {
        const queue = queueOf(head);
        const entry = queue.byId.get(entryId);
        mine.get(head)?.delete(entryId);
        if (entry !== undefined) {
          remove(queue, entry);
          if (granted) {
            queue.grants++;
            queue.units += entry.cost;
            queue.virtual = Math.max(queue.virtual, entry.start);
          }
        }
        const mark: GrantMark = { grants: queue.grants, units: queue.units };
        return { mark, turn: finish(head, queue) };
      },
      async turn(head) {
        const queue = queueOf(head);
        return finish(head, queue);
      },
      async wake(head) {
        const queue = queues.get(head);
        if (queue !== undefined && queue.entries.length > 0) finish(head, queue, true);
      },
      async pause(head, ms, source) {
        const queue = queueOf(head);
        const now = clock();
        queue.pausedUntil = Math.max(queue.pausedUntil, now + ms);
        const until = queue.pausedUntil;
        tell({ kind: 'pause', head, until, ms: until - now, origin: id, source });
        finish(head, queue, true);
        return until;
      },
      async learn(head, budgets) {
        const queue = queueOf(head);
        const now = clock();
        for (const observed of budgets) learnOne(queue, observed, now);
        const first = queue.entries[0];
        if (first !== undefined && waitOf(queue, first.cost, now) > 0) finish(head, queue, true);
      },
      async close() {
        listeners.delete(listener);
        for (const [head, ids] of mine) {
          const queue = queues.get(head);
          if (queue === undefined) continue;
          for (const entryId of ids) {
            const entry = queue.byId.get(entryId);
            if (entry !== undefined) remove(queue, entry);
          }
          finish(head, queue);
        }
        mine.clear();
      },
    };
  };
}

/**
 * Holds one observed budget. Of two in one upstream window (resets within SAME_RESET_MS) the lower
 * estimate stands: the upstream counted calls in the order they reached it, not in grant order.
 * One of a later window replaces the held one; one of an earlier window (arriving late) is over.
 */
function learnOne(queue: KeyQueue, observed: ObservedBudget, now: number): void {
  const requests = observed.name === 'requests';
  const next: Budget = {
    remaining: observed.remaining,
    grants: observed.mark.grants,
    units: observed.mark.units,
    resetAt: now - Math.max(0, Date.now() - observed.observedAt) + observed.resetMs,
  };
  const held = queue.budgets.get(observed.name);
  if (held !== undefined && held.resetAt > now) {
    if (next.resetAt < held.resetAt - SAME_RESET_MS) return;
    const left = (budget: Budget) =>
      budget.remaining - (requests ? queue.grants - budget.grants : queue.units - budget.units);
    if (next.resetAt <= held.resetAt + SAME_RESET_MS && left(held) <= left(next)) return;
  }
  queue.budgets.set(observed.name, next);
}
