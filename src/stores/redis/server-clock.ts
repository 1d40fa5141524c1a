/**
 * The Redis server's clock, read in this process: a check stamped with it spares the script its
 * TIME call, most of what a lone check costs Redis above its reads and write. The offset of the
 * server's TIME from this process's monotonic clock (`performance.now`, which no clock step or
 * skew of the wall clock moves) is taken at the midpoint of a round trip, so it is off by at
 * most half that round trip plus the drift since. It is measured on the first call, again every
 * REFRESH_MS while calls come, and afresh after every reconnection (a failover may bring a
 * server with another clock); an offset older than MAX_AGE_MS is not used, nor one measured over
 * a round trip longer than MAX_ROUND_TRIP_MS. Until one is known the script reads TIME itself.
 * docs/algorithms.md states the bound.
 */

/** The clock argument that has the script read the server's TIME. */
export const SERVER_TIME = '-1';
/** A queued check's clock when it is to carry the stamp taken as its call is sent (never sent as is). */
export const STAMP = 'stamp';

/** How often a process in use measures again (the bound: at least every 10 s). */
const REFRESH_MS = 5_000;
/** An offset this old is not used: calls go on the server's TIME until a new one lands. */
const MAX_AGE_MS = 10_000;
/** A measurement over a longer round trip is dropped: its error could be half of it. */
const MAX_ROUND_TRIP_MS = 20;
/** After a measurement (dropped, refused by an ACL, failed), the next waits this long at least. */
const RETRY_MS = 1_000;

export interface ServerClock {
  /** The script's clock argument for a call sent now: the server's time in ms, or SERVER_TIME. */
  stamp(): string;
  /** Half the round trip of the offset in use (its error bound, drift aside), or undefined. */
  readonly errorMs: number | undefined;
}

/** Client events that mean the connection, and so perhaps the server, changed. */
interface ConnectionEvents {
  on(event: string, listener: () => void): unknown;
}

/**
 * Each client's count of connection changes, counted by one set of listeners per client however
 * many stores share it (a listener per store would pile up on a client shared by many).
 */
const changesByClient = new WeakMap<object, { count: number }>();

function connectionChanges(client: unknown): { count: number } | undefined {
  if (typeof (client as Partial<ConnectionEvents> | null)?.on !== 'function') return undefined;
  let changes = changesByClient.get(client as object);
  if (changes === undefined) {
    const counted = { count: 0 };
    const changed = (): void => {
      counted.count++;
    };
    for (const event of ['close', 'end', 'reconnecting', 'ready'])
      (client as ConnectionEvents).on(event, changed);
    changesByClient.set(client as object, counted);
    changes = counted;
  }
  return changes;
}

/**
 * @param readTime the server's TIME, `[seconds, microseconds]` (ScriptRunner.time).
 * @param client the user's client, whose connection events (ioredis, iovalkey, node-redis) mark
 *   a reconnection; a client without them is re-measured every REFRESH_MS all the same.
 */
export function createServerClock(readTime: () => Promise<unknown>, client: unknown): ServerClock {
  let offset = 0;
  let measuredAt = Number.NEGATIVE_INFINITY;
  let errorMs: number | undefined;
  let measuring = false;
  let nextTry = Number.NEGATIVE_INFINITY;
  // Bumped by every reconnection: a measurement that started before one is dropped.
  let connection = 0;

  function measure(sent: number): void {
    if (measuring || sent < nextTry) return;
    measuring = true;
    nextTry = sent + RETRY_MS;
    const of = connection;
    readTime().then(
      (reply) => {
        if (of !== connection) return;
        measuring = false;
        const received = performance.now();
        const server = serverMs(reply);
        if (server === undefined || received - sent > MAX_ROUND_TRIP_MS) return;
        offset = server - (sent + received) / 2;
        measuredAt = received;
        errorMs = (received - sent) / 2;
      },
      () => {
        if (of === connection) measuring = false;
      },
    );
  }

  function forget(): void {
    connection++;
    measuring = false;
    nextTry = Number.NEGATIVE_INFINITY;
    measuredAt = Number.NEGATIVE_INFINITY;
    errorMs = undefined;
  }

  // The last stamp's text: checks a few µs apart share their millisecond, and its string.
  let lastMs = Number.NaN;
  let lastText = SERVER_TIME;
  function text(ms: number): string {
    if (ms !== lastMs) {
      lastMs = ms;
      lastText = String(ms);
    }
    return lastText;
  }

  const changes = connectionChanges(client);
  let changesSeen = changes?.count ?? 0;

  return {
    stamp() {
      if (changes !== undefined && changes.count !== changesSeen) {
        changesSeen = changes.count;
        forget();
      }
      const now = performance.now();
      const age = now - measuredAt;
      if (age < REFRESH_MS) return text(Math.floor(now + offset));
      measure(now);
      return age < MAX_AGE_MS ? text(Math.floor(now + offset)) : SERVER_TIME;
    },
    get errorMs() {
      return errorMs;
    },
  };
}

/** TIME's reply `[seconds, microseconds]` in ms (with its fraction), or undefined for any other. */
function serverMs(reply: unknown): number | undefined {
  if (!Array.isArray(reply) || reply.length !== 2) return undefined;
  const ms = Number(reply[0]) * 1000 + Number(reply[1]) / 1000;
  return Number.isFinite(ms) ? ms : undefined;
}
