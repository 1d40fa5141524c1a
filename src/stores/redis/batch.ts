/**
 * Batching for the Redis store: checks issued in the same turn of the event loop travel in one
 * script call (one command to write, parse and run, one TIME on the server), whatever the
 * client's own pipelining settings; 32 queued checks go at once, without waiting for the turn
 * to end, and so does a queue of MAX_BATCH_KEYS keys. Checks issued while no call of their slot
 * is in flight go as soon as the code that issued them yields (a microtask), together: with
 * nothing to wait for, Redis starts on them at once, and the checks issued later in the turn
 * share the next call. On a cluster a batch only holds keys of one hash slot, so it still runs
 * on one node.
 * A failed call fails every check in it; none is ever re-sent.
 */

import type { EvaluateReceiver, EvaluateReply } from '../types.js';
import type { Run, Send } from './calls.js';
import { isOutOfMemoryError } from './client.js';
import { decodeBatchPart, deniedOrOverrideAt } from './reply.js';
import type { Script } from './script.js';
import { SERVER_TIME, STAMP } from './server-clock.js';

/**
 * From this many queued checks on, a queue left at the end of a turn goes in two calls when no
 * call of its slot is in flight: while Redis runs one, Node encodes the next or decodes the
 * last, instead of both waiting on one big call. With a call already in flight Redis has that
 * one to run meanwhile, and a second call would only add a write, a read and Redis's per-call work.
 */
const SPLIT_FROM = 8;
/**
 * A queue this long is sent at once, not at the end of the turn: Redis starts on it while this
 * process goes on with the turn's other callbacks (parsing the next HTTP requests), instead of
 * idling until all of them are done. It is also the most checks one call carries.
 */
const SEND_EARLY_AT = 32;
/**
 * Most keys one call carries, whatever its number of checks: a queue that reaches it is sent at
 * once, and a check that would take a queue past it starts the next call. The node's arguments
 * (one per key) and the script's work per call stay bounded, so no check's answer depends on what
 * shares its call. One check of the most rules a limiter accepts (rules.ts, MAX_RULES) fits.
 */
export const MAX_BATCH_KEYS = 4096;
/** Lone-check arguments remembered (see usualSpecs). */
const USUAL_SPECS = 256;

/**
 * The checks queued for one script on one slot, and their keys' count. Kept from turn to turn
 * (at most one per script and slot), so a turn's checks allocate no queue or map entry.
 */
interface Queue {
  readonly shard: number;
  /** The clock the queued checks read (one batch runs at one time). */
  now: string;
  checks: QueuedCheck[];
  keys: number;
  /** Listed to be sent (at the end of this turn, or once the issuing code yields). */
  due: boolean;
}

/** One check as the store queues it. */
export interface QueuedCheck {
  readonly head: string;
  readonly script: Script;
  readonly now: string;
  readonly keys: readonly string[];
  /** The check's rules as the script reads them ("code,limit,windowMs,capacity;..."). */
  readonly ruleSet: string;
  /** 'c' (check) or 'p' (peek). */
  readonly mode: string;
  readonly cost: number;
  readonly seen: string;
  /** How many rules the check has (its reply is decoded here, sparing a promise per check). */
  readonly ruleCount: number;
  /** Where its decoded reply or failure goes. */
  readonly receiver: EvaluateReceiver;
}

/** Answers a check with its part of the reply (see decodeBatchPart), or fails it when that is malformed. */
function answer(pending: QueuedCheck, reply: readonly unknown[], at: number): void {
  let decoded: EvaluateReply;
  try {
    decoded = decodeBatchPart(reply, at, pending.ruleCount, pending.seen);
  } catch (error) {
    pending.receiver.failed(error);
    return;
  }
  pending.receiver.answered(decoded);
}

/**
 * Where each check's part of a batch's flat reply (see the 'b' mode in script.ts) starts: its
 * count of integers, or -1 before the key's current override. An error when the reply does not
 * have exactly the batch's shape.
 */
function partsOf(batch: readonly QueuedCheck[], reply: unknown): number[] | Error {
  const starts: number[] = new Array(batch.length);
  let at = 0;
  let parts = 0;
  if (Array.isArray(reply)) {
    for (; parts < batch.length && at < reply.length; parts++) {
      const count = reply[at];
      if (count === -1 && at + 1 < reply.length) {
        starts[parts] = at;
        at += 2;
      } else if (Number.isSafeInteger(count) && count >= 0 && at + count < reply.length) {
        starts[parts] = at;
        at += 1 + count;
      } else {
        break;
      }
    }
  }
  if (!Array.isArray(reply) || at !== reply.length || parts !== batch.length) {
    return new Error(`floodgate: unexpected reply from the Redis script for ${batch.length} checks`);
  }
  return starts;
}

/** Answers every check of a batch with its part of the reply, or fails them all. */
function deliver(batch: readonly QueuedCheck[], reply: unknown): void {
  const starts = partsOf(batch, reply);
  if (starts instanceof Error) for (const pending of batch) pending.receiver.failed(starts);
  else
    for (let i = 0; i < batch.length; i++)
      answer(batch[i] as QueuedCheck, reply as unknown[], starts[i] as number);
}

/**
 * Answers a batch that Redis refused for want of memory from the same batch sent as peeks, which
 * write nothing: a peek, and a check the peek finds denied (a denial writes nothing either), get
 * the peek's answer; a check that would be allowed cannot be counted, and fails with `error`
 * (so `onStoreError` decides it). A key over its limit thus stays denied while Redis is full.
 */
function answerFromPeeks(batch: readonly QueuedCheck[], peeked: unknown, error: unknown): void {
  const starts = partsOf(batch, peeked);
  for (let i = 0; i < batch.length; i++) {
    const pending = batch[i] as QueuedCheck;
    const at = starts instanceof Error ? undefined : starts[i];
    if (at !== undefined && (pending.mode === 'p' || deniedOrOverrideAt(peeked as unknown[], at))) {
      answer(pending, peeked as unknown[], at);
    } else {
      pending.receiver.failed(error);
    }
  }
}

export interface Batcher {
  /** Queues one check (see the 'b' mode in script.ts); its receiver gets the decoded reply. */
  enqueue(check: QueuedCheck): void;
}

/**
 * @param sendCall sends one call of a script (KEYS, ARGV) and hands over its reply or failure.
 * @param shardOf the cluster slot of a key head, when the store is partitioned.
 * @param runReadOnly sends one call that Redis runs even when it refuses writes (out of memory);
 *   without it, a refused batch fails every check in it.
 * @param stamp the clock argument for a call of checks queued with STAMP, taken as it is sent
 *   (see server-clock.ts); without it the script reads TIME.
 */
export function createBatcher(
  sendCall: Send,
  shardOf: ((head: string) => number) | undefined,
  runReadOnly?: Run,
  stamp: () => string = () => SERVER_TIME,
): Batcher {
  // By script, then by shard: a batch runs one script, on one node. Looked up by object and by
  // number: a string id built per check cost a fresh hash per lookup.
  const queues = new Map<Script, Map<number, Queue>>();
  /** Queues with checks left for the end of this turn. */
  const due: Queue[] = [];
  let scheduled = false;
  /** Queues of slots with no call in flight, sent once the code that issued their checks yields. */
  const soon: Queue[] = [];
  let soonScheduled = false;
  // Calls sent and not yet answered, by shard. A count of 0 stays: a deleted entry would be
  // allocated again by the next call (shards are at most 16,384).
  const inFlight = new Map<number, number>();

  function flush(): void {
    scheduled = false;
    sendListed(due);
  }

  function flushSoon(): void {
    soonScheduled = false;
    sendListed(soon);
  }

  /** Sends the queues listed for the end of a turn, or of the code that issued their checks. */
  function sendListed(listed: Queue[]): void {
    for (const queue of listed) {
      queue.due = false;
      if (queue.checks.length > 0) sendAll(take(queue), queue.shard);
    }
    listed.length = 0;
  }

  /** Empties a queue, returning the checks it held. */
  function take(queue: Queue): QueuedCheck[] {
    const checks = queue.checks;
    queue.checks = [];
    queue.keys = 0;
    return checks;
  }

  /**
   * Sends a queue left at the end of the turn (fewer than SEND_EARLY_AT): two calls from
   * SPLIT_FROM on, unless a call of its shard is still in flight.
   */
  function sendAll(queue: QueuedCheck[], shard: number): void {
    if (queue.length < SPLIT_FROM || (inFlight.get(shard) as number) > 0) {
      send(queue, shard);
      return;
    }
    const half = Math.ceil(queue.length / 2);
    send(queue.slice(0, half), shard);
    send(queue.slice(half), shard);
  }

  function landed(shard: number): void {
    inFlight.set(shard, (inFlight.get(shard) as number) - 1);
  }

  function send(batch: QueuedCheck[], shard: number): void {
    inFlight.set(shard, (inFlight.get(shard) ?? 0) + 1);
    const first = batch[0] as QueuedCheck;
    const { keys, args } = callOf(batch, false);
    sendCall(
      first.script,
      keys,
      args,
      (reply) => {
        landed(shard);
        deliver(batch, reply);
      },
      (error: unknown) => {
        landed(shard);
        if (runReadOnly === undefined || !isOutOfMemoryError(error)) {
          for (const pending of batch) pending.receiver.failed(error);
          return;
        }
        // Refused before it ran (a function) or at its first write (a script): nothing was written.
        const peeks = callOf(batch, true);
        runReadOnly(first.script, peeks.keys, peeks.args).then(
          (reply) => answerFromPeeks(batch, reply, error),
          () => {
            for (const pending of batch) pending.receiver.failed(error);
          },
        );
      },
    );
  }

  /**
   * The argument of a lone check of cost 1 on a key without override, by rule set: the same
   * string from check to check, so ioredis writes a flat string instead of joining five parts
   * each time. Rule sets without an override are the plans', a few; bounded all the same.
   */
  const usualSpecs = new Map<string, string>();

  function loneSpec(only: QueuedCheck, mode: string, usual: boolean): string {
    const spec = `${only.ruleSet}|${mode}:${only.cost}:1:${only.seen}`;
    if (usual) {
      if (usualSpecs.size >= USUAL_SPECS) usualSpecs.clear();
      usualSpecs.set(only.ruleSet, spec);
    }
    return spec;
  }

  /** A batch's KEYS and ARGV (see the 'b' mode in script.ts); with `peeks`, every check as a peek. */
  function callOf(
    batch: readonly QueuedCheck[],
    peeks: boolean,
  ): { keys: readonly string[]; args: string[] } {
    if (batch.length === 1) {
      // A lone check: its own keys, its one argument, and the clock only when it is not the server's.
      const only = batch[0] as QueuedCheck;
      const mode = peeks ? 'p' : only.mode;
      const usual = mode === 'c' && only.cost === 1 && only.seen === '';
      const spec = (usual ? usualSpecs.get(only.ruleSet) : undefined) ?? loneSpec(only, mode, usual);
      const now = only.now === STAMP ? stamp() : only.now;
      return { keys: only.keys, args: now === SERVER_TIME ? [spec] : [spec, now] };
    }
    const keys: string[] = [];
    // Each distinct rule set once, then one argument per check.
    const setNumbers = new Map<string, number>();
    const sets: string[] = [];
    const checks: string[] = [];
    for (const pending of batch) {
      for (const key of pending.keys) keys.push(key);
      let number = setNumbers.get(pending.ruleSet);
      if (number === undefined) {
        sets.push(pending.ruleSet);
        number = sets.length;
        setNumbers.set(pending.ruleSet, number);
      }
      checks.push(`${peeks ? 'p' : pending.mode}:${pending.cost}:${number}:${pending.seen}`);
    }
    const { now } = batch[0] as QueuedCheck;
    const args = ['b', String(batch.length), now === STAMP ? stamp() : now, String(sets.length)];
    for (const set of sets) args.push(set);
    for (const check of checks) args.push(check);
    return { keys, args };
  }

  return {
    enqueue(check) {
      const shard = shardOf === undefined ? 0 : shardOf(check.head);
      let byShard = queues.get(check.script);
      if (byShard === undefined) {
        byShard = new Map();
        queues.set(check.script, byShard);
      }
      let queue = byShard.get(shard);
      if (queue === undefined) {
        queue = { shard, now: check.now, checks: [], keys: 0, due: false };
        byShard.set(shard, queue);
      }
      // The clock is STAMP or '-1' (the server's TIME) but in tests and simulations, where a check that
      // read another time than the queued ones, or would take the queue past MAX_BATCH_KEYS,
      // starts the next call.
      if (
        queue.checks.length > 0 &&
        (queue.now !== check.now || queue.keys + check.keys.length > MAX_BATCH_KEYS)
      ) {
        send(take(queue), shard);
      }
      queue.now = check.now;
      queue.keys += check.keys.length;
      queue.checks.push(check);
      if (queue.checks.length >= SEND_EARLY_AT || queue.keys >= MAX_BATCH_KEYS) {
        send(take(queue), shard);
      } else if (!queue.due) {
        queue.due = true;
        if (!((inFlight.get(shard) as number) > 0)) {
          // Nothing in flight to wait for: sent as soon as the code that issued it yields (a
          // microtask), with the checks it issued along, not at the end of the turn.
          soon.push(queue);
          if (!soonScheduled) {
            soonScheduled = true;
            queueMicrotask(flushSoon);
          }
        } else {
          due.push(queue);
          if (!scheduled) {
            scheduled = true;
            // On the next turn of the event loop, after this turn's I/O callbacks: HTTP requests
            // from many connections arrive in separate callbacks of one turn, and all join this
            // batch (nextTick would batch only the checks of one callback).
            setImmediate(flush);
          }
        }
      }
    },
  };
}
