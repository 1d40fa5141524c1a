/**
 * Bottleneck.Group: one limiter per key, made on first use with the group's options and the id
 * `<group id>-<key>`, and deleted once unused for `timeout` ms (default 5 minutes).
 */
import { unref } from '../turns.js';
import type { Bottleneck } from './bottleneck.js';
import { RedisConnection } from './connection.js';
import { type Emitting, Events } from './events.js';

const DEFAULT_TIMEOUT_MS = 5 * 60 * 1000;

export interface Group extends Emitting {}

/** Makes the group's limiters; set by the entry point (the class and the group refer to each other). */
let makeLimiter: (options: Record<string, unknown>) => Bottleneck;

export function useLimiterClass(make: (options: Record<string, unknown>) => Bottleneck): void {
  makeLimiter = make;
}

/**
 * One limiter per key, all with the same options.
 * @example
 * const perUser = new Bottleneck.Group({ maxConcurrent: 1, minTime: 250 });
 * await perUser.key(userId).schedule(() => sendMail(userId));
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: Events installs on/once/removeAllListeners.
export class Group {
  readonly Events: Events;
  id: string;
  timeout: number;
  private limiterOptions: Record<string, unknown>;
  private readonly instances = new Map<string, Bottleneck>();
  private cleanup: ReturnType<typeof setInterval> | undefined;
  /** The Redis connection every limiter of the group shares, when the group made it. */
  private readonly ownConnection: RedisConnection | undefined;

  /** The connection the group's limiters share (given or made), or null for local limiters. */
  get connection(): RedisConnection | null {
    const given = this.limiterOptions.connection;
    return given instanceof RedisConnection ? given : null;
  }

  constructor(limiterOptions: Record<string, unknown> = {}) {
    this.limiterOptions = limiterOptions;
    this.id = String(limiterOptions.id ?? 'group-key');
    this.timeout = Number(limiterOptions.timeout ?? DEFAULT_TIMEOUT_MS);
    this.Events = new Events(this);
    const { datastore, connection } = limiterOptions;
    if (connection == null && (datastore === 'redis' || datastore === 'ioredis')) {
      this.ownConnection = new RedisConnection(limiterOptions);
      this.limiterOptions = { ...limiterOptions, connection: this.ownConnection };
    }
    this.startCleanup();
  }

  /** The limiter of `key`, made on first use. */
  key(key = ''): Bottleneck {
    let limiter = this.instances.get(key);
    if (limiter === undefined) {
      limiter = makeLimiter({ ...this.limiterOptions, id: `${this.id}-${key}`, timeout: this.timeout });
      this.instances.set(key, limiter);
      void this.Events.trigger('created', limiter, key);
    }
    return limiter;
  }

  async deleteKey(key = ''): Promise<boolean> {
    const limiter = this.instances.get(key);
    if (limiter === undefined) return false;
    this.instances.delete(key);
    await limiter.disconnect();
    return true;
  }

  keys(): string[] {
    return [...this.instances.keys()];
  }

  limiters(): { key: string; limiter: Bottleneck }[] {
    return [...this.instances].map(([key, limiter]) => ({ key, limiter }));
  }

  async clusterKeys(): Promise<string[]> {
    return this.keys();
  }

  /** New options for limiters made from now on; a new `timeout` restarts the cleanup. */
  updateSettings(options: Record<string, unknown> = {}): void {
    Object.assign(this.limiterOptions, options);
    if (options.id !== undefined) this.id = String(options.id);
    if (options.timeout !== undefined) {
      this.timeout = Number(options.timeout);
      this.startCleanup();
    }
  }

  async disconnect(flush = true): Promise<void> {
    clearInterval(this.cleanup);
    await this.ownConnection?.disconnect(flush);
  }

  private startCleanup(): void {
    clearInterval(this.cleanup);
    this.cleanup = setInterval(() => {
      const now = Date.now();
      for (const [key, limiter] of this.instances) {
        if (limiter.idleSince() + this.timeout < now) void this.deleteKey(key);
      }
    }, this.timeout / 2);
    unref(this.cleanup);
  }
}
