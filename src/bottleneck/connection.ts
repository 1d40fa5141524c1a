/**
 * Where a limiter's limits live: a memory store of its own (`datastore: 'local'`), or a Floodgate
 * Redis store shared by every limiter with the same `id` (`datastore: 'redis' | 'ioredis'`, or a
 * `connection`). `Bottleneck.RedisConnection` / `IORedisConnection` are one class here: a client
 * (the `client` given, else one made with ioredis from `clientOptions` or `clusterNodes`) and
 * its store, which a Group's limiters share.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { memoryStore } from '../stores/memory/store.js';
import { redisStore } from '../stores/redis/store.js';
import type { Store } from '../stores/types.js';
import { BottleneckError } from './errors.js';

export interface Connection {
  readonly store: Store;
  /** True for a limiter's own memory store. */
  readonly local: boolean;
  /** Resolves with `clients()` once the client is ready. */
  readonly ready: Promise<unknown>;
  /** Bottleneck's `clients()`: `{ client }` on Redis, `{}` locally. */
  readonly clients: Record<string, unknown>;
  disconnect(flush?: boolean): Promise<void>;
}

interface IoredisClient {
  status?: string;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

type IoredisModule = {
  new (options?: object): IoredisClient;
  Cluster: new (nodes: unknown, options?: object) => IoredisClient;
};

/** ioredis from the application's own dependencies (it is an optional peer of floodgate). */
function loadIoredis(): IoredisModule {
  try {
    const found = createRequire(join(process.cwd(), 'index.js'))('ioredis') as IoredisModule & {
      default?: IoredisModule;
    };
    return found.default ?? found;
  } catch {
    throw new BottleneckError(
      "datastore 'redis' / 'ioredis' makes its client with ioredis: npm install ioredis, or pass a ready client as `client`",
    );
  }
}

/**
 * Bottleneck.RedisConnection and Bottleneck.IORedisConnection: one Redis client and its store.
 * @example
 * const connection = new Bottleneck.IORedisConnection({ client: new Redis(process.env.REDIS_URL) });
 * const limiter = new Bottleneck({ id: 'partner-api', maxConcurrent: 5, connection });
 */
export class RedisConnection implements Connection {
  readonly store: Store;
  readonly local = false;
  /** `'redis'` or `'ioredis'`, as asked for: a limiter given this connection reports it. */
  readonly datastore: string;
  readonly ready: Promise<unknown>;
  readonly clients: Record<string, unknown>;
  private readonly client: IoredisClient;
  private readonly owned: boolean;

  constructor(options: Record<string, unknown> = {}) {
    const given = options.client as IoredisClient | undefined;
    this.owned = given === undefined;
    this.datastore = options.datastore === 'redis' ? 'redis' : 'ioredis';
    if (given !== undefined) this.client = given;
    else {
      const Redis = (options.Redis as IoredisModule | undefined) ?? loadIoredis();
      const clientOptions = (options.clientOptions as object | undefined) ?? {};
      this.client =
        options.clusterNodes != null
          ? new Redis.Cluster(options.clusterNodes, { redisOptions: clientOptions })
          : new Redis(clientOptions);
    }
    this.clients = { client: this.client };
    this.store = redisStore({ client: this.client as never });
    const client = this.client;
    this.ready =
      client.status === undefined || client.status === 'ready'
        ? Promise.resolve(this.clients)
        : new Promise((resolve) => client.once('ready', () => resolve(this.clients)));
  }

  /** Closes the client this connection made (a client given to it stays its owner's). */
  async disconnect(flush = true): Promise<void> {
    if (!this.owned) return;
    if (flush) await this.client.quit();
    else this.client.disconnect();
  }
}

/** A limiter's connection, from its options; `shared` says whether the limiter may close it. */
export function openConnection(options: Record<string, unknown>): {
  connection: Connection;
  shared: boolean;
} {
  if (options.connection instanceof RedisConnection) return { connection: options.connection, shared: true };
  if (options.connection != null) {
    throw new BottleneckError(
      'connection: expected a Bottleneck.RedisConnection or Bottleneck.IORedisConnection',
    );
  }
  if (options.datastore === 'redis' || options.datastore === 'ioredis' || options.client != null) {
    return { connection: new RedisConnection(options), shared: false };
  }
  return {
    connection: {
      store: memoryStore(),
      local: true,
      ready: Promise.resolve({}),
      clients: {},
      disconnect: async () => undefined,
    },
    shared: false,
  };
}
