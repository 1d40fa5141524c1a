/**
 * The scheduler's shared state behind one store-neutral contract: per key, one queue of waiting
 * jobs ordered by priority then by tenant in weighted fair order, the key's pause, and the
 * budgets learned from the upstream's headers. The memory store keeps it in this process; the
 * Redis store keeps it on the server, shared by every process, and pushes news over pub/sub.
 */

/** Where a key's queue stands after a call. */
export interface QueueTurn {
  /** Grows with every change of head: news with a lower version is stale. */
  readonly version: number;
  /** The entry at the head (its id from `enqueue`), or `''` when the queue is empty. */
  readonly head: string;
  /** How long the head must wait before checking the rules (a pause, or a learned budget spent). */
  readonly waitMs: number;
  /** Entries waiting, every process's. */
  readonly queued: number;
}

/** The key's grant counters right after one grant: what later observations are counted from. */
export interface GrantMark {
  /** Jobs granted on the key so far. */
  readonly grants: number;
  /** Cost granted on the key so far. */
  readonly units: number;
}

/** A budget an upstream response reported, and the grant it was reported after. */
export interface ObservedBudget {
  /** `'requests'` counts 1 per job; any other name counts each job's cost. */
  readonly name: string;
  readonly remaining: number;
  /** Until the upstream's reset, from `observedAt`: the budget is forgotten then. */
  readonly resetMs: number;
  /** Epoch ms on the observing process's clock when the response was read. */
  readonly observedAt: number;
  readonly mark: GrantMark;
}

/** What a queue tells every participant (pub/sub on Redis). `head` is the key's head string. */
export type QueueNews =
  | {
      readonly kind: 'turn';
      readonly head: string;
      readonly turn: QueueTurn;
      /** Told again without a change of head (a slot came free, a pause, a budget spent): look again. */
      readonly forced: boolean;
    }
  | {
      readonly kind: 'pause';
      readonly head: string;
      /** Epoch ms on the store's clock. */
      readonly until: number;
      readonly ms: number;
      /** The participant that paused. */
      readonly origin: string;
      readonly source: string;
    };

/** One participant's (one scheduler's) handle on the queues of a store. */
export interface QueueState {
  /** This participant's id (a part of every entry it enqueues). */
  readonly id: string;
  /** Queues a job; `tenant` is already safe for keys (encoded). Answers its entry id and the turn. */
  enqueue(
    head: string,
    priority: number,
    tenant: string,
    cost: number,
  ): Promise<{ id: string; turn: QueueTurn }>;
  /** Takes an entry out of the queue: granted (counted in the grant counters) or given up. */
  leave(head: string, id: string, granted: boolean): Promise<{ mark: GrantMark; turn: QueueTurn }>;
  /** The key's turn now; also renews this participant's liveness and drops entries of dead ones. */
  turn(head: string): Promise<QueueTurn>;
  /** Tells every participant the key's turn again (a concurrency slot came free). */
  wake(head: string): Promise<void>;
  /** Pauses the key for at least `ms` (a pause only extends); answers its end, epoch ms. */
  pause(head: string, ms: number, source: string): Promise<number>;
  /** Holds budgets learned from an upstream response (they only ever lower what the rules allow). */
  learn(head: string, budgets: readonly ObservedBudget[]): Promise<void>;
  /** Gives up every entry of this participant and stops listening. */
  close(): Promise<void>;
  /** In-process queues only (the memory store): jobs that may skip the queue. */
  readonly skip?: QueueSkip;
}

/** A job on a key nothing waits on is checked at once, not enqueued: no entry, no leave. */
export interface QueueSkip {
  /** Whether no entry waits on the key and no pause or learned budget holds a job of `cost`. */
  idle(head: string, cost: number): boolean;
  /** Counts a grant made without queuing (in the grant counters); answers its mark. */
  granted(head: string, cost: number): GrantMark;
}

/** Store.queues: a new participant on the keys under `prefix`, whose news goes to `listener`. */
export type OpenQueues = (prefix: string, listener: (news: QueueNews) => void) => QueueState;

/** Bits of a priority above the virtual start time in a queue score (exact in a double up to 2^53). */
export const PRIORITY_SHIFT = 2 ** 49;
/**
 * Two observed budgets whose resets are this close belong to one upstream window: the lower
 * estimate stands, whichever job's grant came first (calls reach the upstream out of grant order).
 * A window's reset is a whole window later, so a reset further out than this is a new window's.
 */
export const SAME_RESET_MS = 100;
/** How long a participant's entries stay live without a sign of life (its heartbeats renew it). */
export const LIVENESS_MS = 5_000;
