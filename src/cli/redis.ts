/**
 * Redis connections for the CLI, through ioredis (an optional peer dependency, loaded only when
 * a command is given `--redis`, `--redis-cluster` or REDIS_URL). One-shot commands fail fast;
 * the gateway reconnects in the background and never queues checks while disconnected.
 */
import type { Cluster, Redis } from 'ioredis';
import { RuntimeFailure, UsageError } from './args.js';

/** Where Redis is: one server URL, or the seed nodes of a cluster. */
export type RedisTarget = { url: string } | { cluster: string[] };

export interface RedisConnection {
  readonly client: Redis | Cluster;
  /** The target for messages and logs, without credentials. */
  readonly label: string;
  /** The standalone servers (one; or every master of a cluster). */
  masters(): Redis[];
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** A long-running gateway: reconnect forever, never queue commands while disconnected. */
  persistent?: boolean;
  /** Called with connection errors after the first successful connection. */
  onError?: (error: Error) => void;
  connectTimeoutMs?: number;
}

/** Parses `host:port` or `redis://[user:pass@]host:port` into ioredis node options. */
export function parseNode(value: string, option: string): { host: string; port: number; url?: URL } {
  const text = value.trim();
  if (/^rediss?:\/\//.test(text)) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new UsageError(`${option}: '${redactUrl(text)}' is not a valid Redis URL`);
    }
    return { host: url.hostname || '127.0.0.1', port: Number(url.port || 6379), url };
  }
  const match = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(text);
  if (!match?.[1] || Number(match[2]) > 65535) {
    throw new UsageError(`${option}: '${text}' must be host:port or redis://host:port`);
  }
  return { host: match[1], port: Number(match[2]) };
}

/** A URL (Redis or upstream) with any password replaced by `***`, for messages and logs. */
export function redactUrl(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@/i, (_all, scheme: string, auth: string) => {
    const user = auth.includes(':') ? auth.slice(0, auth.indexOf(':')) : '';
    return `${scheme}${user}:***@`;
  });
}

async function loadIoredis(): Promise<{ Redis: typeof Redis; Cluster: typeof Cluster }> {
  try {
    const ioredis = await import('ioredis');
    return { Redis: ioredis.Redis, Cluster: ioredis.Cluster };
  } catch {
    throw new RuntimeFailure("Redis support needs the 'ioredis' package: npm install ioredis");
  }
}

/** Connects, and waits until the connection is ready (or fails with a one-line RuntimeFailure). */
export async function connectRedis(
  target: RedisTarget,
  options: ConnectOptions = {},
): Promise<RedisConnection> {
  const ioredis = await loadIoredis();
  const persistent = options.persistent ?? false;
  const connectTimeout = options.connectTimeoutMs ?? 5000;
  const common = {
    lazyConnect: true,
    connectTimeout,
    maxRetriesPerRequest: persistent ? 1 : 0,
    enableOfflineQueue: !persistent,
  };
  let client: Redis | Cluster;
  let label: string;
  if ('url' in target) {
    parseNode(target.url, '--redis');
    label = redactUrl(target.url);
    const url = /^rediss?:\/\//.test(target.url) ? target.url : `redis://${target.url}`;
    client = new ioredis.Redis(url, {
      ...common,
      retryStrategy: (times) => (persistent ? Math.min(50 * 2 ** Math.min(times, 6), 2000) : null),
    });
  } else {
    const nodes = target.cluster.map((seed) => parseNode(seed, '--redis-cluster'));
    const withAuth = nodes.find((node) => node.url?.password || node.url?.username)?.url;
    label = `cluster ${nodes.map((node) => `${node.host}:${node.port}`).join(',')}`;
    client = new ioredis.Cluster(
      nodes.map(({ host, port }) => ({ host, port })),
      {
        lazyConnect: true,
        enableOfflineQueue: !persistent,
        clusterRetryStrategy: (times) => (persistent ? Math.min(100 * times, 2000) : null),
        redisOptions: {
          connectTimeout,
          maxRetriesPerRequest: common.maxRetriesPerRequest,
          ...(withAuth
            ? {
                username: decodeURIComponent(withAuth.username) || undefined,
                password: decodeURIComponent(withAuth.password) || undefined,
              }
            : {}),
          ...(nodes.some((node) => node.url?.protocol === 'rediss:') ? { tls: {} } : {}),
        },
      },
    );
  }
  let connected = false;
  let lastError: Error | undefined;
  client.on('error', (error: Error) => {
    lastError = error;
    if (connected) options.onError?.(error);
  });
  try {
    await withTimeout(client.connect(), connectTimeout + 1000);
    connected = true;
  } catch (error) {
    // Disconnecting a client that already ended would arm ioredis's 2 s stream-close timer, which
    // keeps a one-shot command alive for nothing.
    if (client.status !== 'end') client.disconnect();
    const cause = lastError ?? error;
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new RuntimeFailure(`cannot connect to Redis (${label}): ${message}`);
  }
  return {
    client,
    label,
    masters: () =>
      'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client as Redis],
    async close() {
      try {
        await withTimeout(client.quit(), 1000);
      } catch {
        client.disconnect();
      }
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The Redis target from flags or the REDIS_URL environment variable, or undefined for memory. */
export function redisTargetFrom(
  url: string | undefined,
  cluster: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): RedisTarget | undefined {
  if (url !== undefined && cluster !== undefined) {
    throw new UsageError('--redis and --redis-cluster cannot be used together');
  }
  if (cluster !== undefined) {
    const seeds = cluster
      .split(',')
      .map((seed) => seed.trim())
      .filter(Boolean);
    if (seeds.length === 0) throw new UsageError('--redis-cluster: give at least one host:port');
    for (const seed of seeds) parseNode(seed, '--redis-cluster');
    return { cluster: seeds };
  }
  const chosen = url ?? (env.REDIS_URL || undefined);
  if (chosen === undefined) return undefined;
  parseNode(chosen, url !== undefined ? '--redis' : 'REDIS_URL');
  return { url: chosen };
}
