/**
 * Whether an upstream that owes the gateway something before its response (taking the rest of
 * the request body, or answering it) is still making progress, judged by looks at its
 * connection: bytes the connection took from the gateway, bytes the upstream's TCP acknowledged
 * (Linux, tcp-unacked.ts), bytes it sent. Measured where the bytes move, never inferred from
 * `drain`.
 *
 * TCP shows a slow reader in steps, not byte by byte: the kernel takes more from the gateway once
 * a third of its send buffer is free, the reader's TCP acknowledges once it has read enough to
 * open its window, and the last bytes it reads, from its own receive buffer, show only as its
 * answer. So an upstream with bytes still on their way, or that has been seen reading, is judged
 * by its own pace: silent after T plus twice its longest pause between two signs (at least 2T),
 * and, where its TCP's acknowledgements show its pace, not before T past the moment it would have
 * read every byte acknowledged at that pace. One that has the whole request and was never seen
 * reading is silent after T.
 */
import type { Socket } from 'node:net';
import { unacknowledgedBytes } from './tcp-unacked.js';

/** `stale`: the wait it looked at ended while it looked. */
export type Verdict = 'progress' | 'wait' | 'silent' | 'stale';

interface Reading {
  /** Bytes of the request the kernel took from the gateway (writes completed). */
  taken: number;
  /** Bytes sent that the upstream's TCP has not acknowledged (Linux only). */
  unacked: number | undefined;
  /** Bytes received from the upstream. */
  received: number;
}

export interface ProgressWatch {
  /** The connection is up: the upstream may read from now on. */
  connected(socket: Socket): void;
  /** A wait on the upstream starts now (nothing if one is under way). */
  begin(): void;
  /** The wait is over: the upstream took what was queued, or answered. */
  end(): void;
  look(socket: Socket): Promise<Verdict>;
}

export function createProgressWatch(timeoutMs: number): ProgressWatch {
  let waiting = false;
  let epoch = 0;
  let mark: Reading | undefined;
  /** When the wait began or the last sign of progress was seen. */
  let since = 0;
  let lastSign: number | undefined;
  // Kept for the whole exchange: the upstream's pace, once it has been seen reading.
  let seenReading = false;
  let longestPause = timeoutMs / 2;
  const pace = createPace();

  return {
    connected(socket) {
      pace.start(socket.bytesWritten - socket.writableLength);
    },
    begin() {
      if (waiting) return;
      waiting = true;
      mark = undefined;
      lastSign = undefined;
      since = performance.now();
    },
    end() {
      waiting = false;
      epoch++;
    },
    async look(socket) {
      const started = epoch;
      const unacked = await unacknowledgedBytes(socket);
      if (epoch !== started || !waiting) return 'stale';
      const at = performance.now();
      const now = { taken: socket.bytesWritten - socket.writableLength, unacked, received: socket.bytesRead };
      const before = mark;
      mark = now;
      if (before !== undefined && moved(before, now)) {
        if (lastSign !== undefined) longestPause = Math.max(longestPause, at - lastSign);
        seenReading = true;
        lastSign = at;
        since = at;
        pace.sample(at, now);
        return 'progress';
      }
      if (before === undefined) pace.sample(at, now);
      const onTheWay = socket.writableLength > 0 || (unacked ?? 0) > 0;
      const allowed = onTheWay || seenReading ? timeoutMs + 2 * longestPause : timeoutMs;
      return at - since >= allowed && at >= pace.doneAt() + timeoutMs ? 'silent' : 'wait';
    },
  };
}

/**
 * The upstream's reading pace, from its TCP's acknowledgements: the first and the latest count of
 * bytes acknowledged since the connection came up. `doneAt` is when, reading at that pace since
 * then, it will have read all of them (-Infinity while the pace is unknown).
 */
function createPace() {
  let startedAt = 0;
  let base = 0;
  let first: { at: number; acked: number } | undefined;
  let latest: { at: number; acked: number } | undefined;
  return {
    start(taken: number) {
      startedAt = performance.now();
      base = taken;
    },
    sample(at: number, reading: Reading) {
      if (reading.unacked === undefined) return;
      const point = { at, acked: reading.taken - reading.unacked - base };
      if (first === undefined) first = point;
      else latest = point;
    },
    doneAt(): number {
      if (first === undefined || latest === undefined || latest.acked <= first.acked) {
        return Number.NEGATIVE_INFINITY;
      }
      const perMs = (latest.acked - first.acked) / (latest.at - first.at);
      return startedAt + latest.acked / perMs;
    },
  };
}

function moved(before: Reading, now: Reading): boolean {
  return before.taken !== now.taken || before.unacked !== now.unacked || before.received !== now.received;
}
