/**
 * The gateway's store: the in-memory store, or Redis / Redis Cluster through ioredis. Every store
 * call is timed for the `floodgate_store_latency_seconds` histogram. A store outlives config
 * reloads unless the reload points at another Redis, so counts survive a SIGHUP.
 */
import { memoryStore, redisStore, type Store, type StoreWarning } from '../../index.js';
import { timedStore } from '../../internal.js';
import { connectRedis, type RedisConnection, type RedisTarget } from '../redis.js';
import type { Logger } from './log.js';
import type { GatewayMetrics } from './metrics.js';

export interface StoreHandle {
  readonly store: Store;
  readonly target: RedisTarget | undefined;
  /** 'memory', or the Redis target without credentials. */
  readonly label: string;
  /** Risks found in the store's configuration (an allkeys-* maxmemory-policy), for /healthz. */
  warnings(): readonly string[];
  /**
   * A risk a limiter on this store found (its `warning` event: e.g. calendar quotas on a Redis
   * that persists nothing): logged and listed once per code, whichever limiter found it.
   */
  report(warning: StoreWarning): void;
  /** Resolves when the store answers (Redis PING), rejects otherwise. */
  ping(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function openStore(
  target: RedisTarget | undefined,
  logger: Logger,
  metrics: GatewayMetrics,
): Promise<StoreHandle> {
  if (target === undefined) {
    return {
      store: timed(memoryStore(), metrics),
      target,
      label: 'memory',
      warnings: () => [],
      report: () => undefined,
      ping: async () => {},
      close: async () => {},
    };
  }
  let lastLogged = 0;
  const connection: RedisConnection = await connectRedis(target, {
    persistent: true,
    onError: (error) => {
      // A Redis outage produces an error per reconnect attempt: log at most one a second.
      const now = Date.now();
      if (now - lastLogged < 1000) return;
      lastLogged = now;
      logger.warn('redis_error', { store: connection.label, error });
    },
  });
  const store = redisStore({ client: connection.client });
  // Logged once per store and code, at start and when a reload opens another one.
  let warnings: readonly string[] = [];
  const reported = new Set<string>();
  const report = (warning: StoreWarning) => {
    if (reported.has(warning.code)) return;
    reported.add(warning.code);
    warnings = [...warnings, warning.message];
    logger.warn('store_warning', { store: connection.label, ...warning });
  };
  store.inspect?.().then((found) => {
    for (const warning of found) report(warning);
  });
  return {
    store: timed(store, metrics),
    target,
    label: connection.label,
    warnings: () => warnings,
    report,
    async ping(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          connection.client.ping(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
          }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => connection.close(),
  };
}

export function sameTarget(a: RedisTarget | undefined, b: RedisTarget | undefined): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The same store, with the duration of each store call recorded (see timedStore). */
function timed(store: Store, metrics: GatewayMetrics): Store {
  return timedStore(store, (operation, seconds) =>
    metrics.storeLatency.observe(seconds, { store: store.kind, operation }),
  );
}
