/**
 * Batching for the Redis store: checks issued in the same turn of the event loop travel in one
 * script call (one command to write, parse and run, one TIME on the server), whatever the
 * client's own pipelining settings. On a cluster a batch only holds keys of one hash slot, so it
 * still runs on one node. A failed call fails every check in it; none is ever re-sent.
 */
import type { Script } from '../algorithms/script.js';

/** Checks per script call at most: long enough to amortise, short enough not to stall Redis. */
const MAX_BATCH = 128;

interface Pending {
  readonly script: Script;
  readonly now: string;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  resolve(reply: unknown): void;
  reject(error: unknown): void;
}

export interface Batcher {
  /**
   * Queues one check: its script, its `now` argument ('-1' for the server's clock), its keys and
   * its arguments after the batch header. Resolves with its reply.
   */
  enqueue(
    head: string,
    script: Script,
    now: string,
    keys: readonly string[],
    args: readonly string[],
  ): Promise<unknown>;
}

/**
 * @param run sends one call of a script (KEYS, ARGV) and resolves with its reply.
 * @param shardOf the cluster slot of a key head, when the store is partitioned.
 */
export function createBatcher(
  run: (script: Script, keys: string[], args: string[]) => Promise<unknown>,
  shardOf: ((head: string) => number) | undefined,
): Batcher {
  // By shard, script and clock: a batch runs one script, on one node, at one time (the server's
  // TIME, or one reading of an injected clock).
  const queues = new Map<string, Pending[]>();
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    for (const [id, queue] of queues) {
      queues.delete(id);
      for (let start = 0; start < queue.length; start += MAX_BATCH)
        send(queue.slice(start, start + MAX_BATCH));
    }
  }

  function send(batch: Pending[]): void {
    const keys: string[] = [];
    const first = batch[0] as Pending;
    const args: string[] = ['b', String(batch.length), first.now];
    for (const pending of batch) {
      for (const key of pending.keys) keys.push(key);
      for (const arg of pending.args) args.push(arg);
    }
    run(first.script, keys, args).then(
      (replies) => {
        if (!Array.isArray(replies) || replies.length !== batch.length) {
          const error = new Error(
            `floodgate: unexpected reply from the Redis script for ${batch.length} checks`,
          );
          for (const pending of batch) pending.reject(error);
          return;
        }
        batch.forEach((pending, i) => {
          pending.resolve(replies[i]);
        });
      },
      (error: unknown) => {
        for (const pending of batch) pending.reject(error);
      },
    );
  }

  return {
    enqueue(head, script, now, keys, args) {
      return new Promise((resolve, reject) => {
        const id = `${shardOf === undefined ? '' : shardOf(head)}:${script.sha}:${now}`;
        let queue = queues.get(id);
        if (queue === undefined) {
          queue = [];
          queues.set(id, queue);
        }
        queue.push({ script, now, keys, args, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          // After the current callback's promise continuations (nextTick runs once the microtask
          // queue is drained), so every check they issue joins this batch, without waiting for
          // another turn of the event loop.
          process.nextTick(flush);
        }
      });
    },
  };
}
