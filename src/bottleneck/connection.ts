/**
 * Where a limiter's limits live: a memory store of its own (`datastore: 'local'`), or a Floodgate
 * Redis store shared by every limiter with the same `id`.
 */
import { memoryStore } from '../stores/memory/store.js';
import type { Store } from '../stores/types.js';
import type { Events } from './events.js';

export interface Connection {
  readonly store: Store;
  /** True for a limiter's own memory store. */
  readonly local: boolean;
  readonly ready: Promise<unknown>;
  /** Bottleneck's `clients()`: the Redis clients, `{}` locally. */
  readonly clients: Record<string, unknown>;
  disconnect(flush: boolean): Promise<void>;
}

/** A limiter's connection, from its options. */
export function openConnection(_options: Record<string, unknown>, _events: Events): Connection {
  return {
    store: memoryStore(),
    local: true,
    ready: Promise.resolve(),
    clients: {},
    disconnect: async () => undefined,
  };
}
