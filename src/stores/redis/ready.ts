/**
 * Whether a Redis client is connected yet, through its public API only: ioredis and iovalkey
 * (`status`, the `ready` and `end` events; a `lazyConnect` client is told to connect) and
 * node-redis clients (`isReady`, the same events). A client of any other kind is taken as ready.
 */

interface Events {
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  off?(event: string, listener: (...args: unknown[]) => void): unknown;
  removeListener?(event: string, listener: (...args: unknown[]) => void): unknown;
}

export interface Readiness {
  /** Whether the client has been ready at least once. */
  readonly ready: boolean;
  /** Resolves when the client is ready; rejects when it ends first. */
  whenReady(): Promise<void>;
  /** whenReady, without telling a `lazyConnect` client to connect (for work that may wait for the first call). */
  whenConnected(): Promise<void>;
  /**
   * whenReady, for a store call: past MAX_CALLS_BEFORE_READY calls already waiting, rejects at
   * once, so that a client that never connects cannot pile them up.
   */
  beforeCall(): Promise<void>;
}

/** Calls that may wait for a client's first connection (each is answered by the limiter's deadline). */
const MAX_CALLS_BEFORE_READY = 10_000;

function closedError(): Error {
  return new Error('floodgate: the Redis client was closed before it connected');
}

const ALWAYS_READY: Readiness = {
  ready: true,
  whenReady: () => Promise.resolve(),
  whenConnected: () => Promise.resolve(),
  beforeCall: () => Promise.resolve(),
};

/** The client's readiness, or ALWAYS_READY for a client that does not tell. */
export function readinessOf(client: unknown): Readiness {
  if (typeof client !== 'object' || client === null) return ALWAYS_READY;
  const candidate = client as Partial<Events> & { status?: unknown; isReady?: unknown; connect?: unknown };
  if (typeof candidate.once !== 'function') return ALWAYS_READY;
  let isReadyNow: () => boolean;
  if (typeof candidate.status === 'string') isReadyNow = () => candidate.status === 'ready';
  else if (typeof candidate.isReady === 'boolean') isReadyNow = () => candidate.isReady === true;
  else return ALWAYS_READY;
  const events = candidate as Events;

  let seenReady = isReadyNow();
  let waiting: Promise<void> | undefined;
  let callsWaiting = 0;
  function ready(): boolean {
    if (!seenReady) seenReady = isReadyNow();
    return seenReady;
  }
  function whenReady(): Promise<void> {
    const connectedOrEnded = whenConnected();
    // An ioredis `lazyConnect` client connects on its first command, which waits for this.
    if (candidate.status === 'wait' && typeof candidate.connect === 'function') {
      (candidate.connect as () => Promise<void>).call(client).catch(() => undefined);
    }
    return connectedOrEnded;
  }
  function whenConnected(): Promise<void> {
    if (ready()) return Promise.resolve();
    // An ioredis client that gave up reconnecting (or was disconnected) will never be ready.
    if (candidate.status === 'end') return Promise.reject(closedError());
    waiting ??= new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        stop();
        seenReady = true;
        resolve();
      };
      const onEnd = (): void => {
        stop();
        waiting = undefined;
        reject(closedError());
      };
      function stop(): void {
        const off = (events.off ?? events.removeListener)?.bind(events);
        off?.('ready', onReady);
        off?.('end', onEnd);
      }
      events.once('ready', onReady);
      events.once('end', onEnd);
    });
    return waiting;
  }
  return {
    get ready() {
      return ready();
    },
    whenReady,
    whenConnected,
    async beforeCall() {
      if (callsWaiting >= MAX_CALLS_BEFORE_READY) {
        throw new Error('floodgate: the Redis client has not connected yet');
      }
      callsWaiting++;
      try {
        await whenReady();
      } finally {
        callsWaiting--;
      }
    },
  };
}
