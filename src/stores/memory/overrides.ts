/**
 * The memory store's overrides: few, set by operators, kept by key head in a map of their own,
 * outside the bound on rule states. An expired one is dropped when next read.
 */
import { keyHead } from '../../base/key-encoding.js';
import type { StoredOverride } from '../types.js';

export interface OverrideEntry {
  readonly prefix: string;
  readonly key: string;
  readonly value: string;
  /** Store clock time it expires at, or undefined for none. */
  readonly expiresAt: number | undefined;
}

export interface MemoryOverrides {
  /** The live override of a head at `now`, if any. */
  live(head: string, now: number): OverrideEntry | undefined;
  set(prefix: string, key: string, value: string, expiresAt: number | undefined): void;
  clear(prefix: string, key: string): void;
  list(prefix: string, now: number): StoredOverride[];
}

export function createMemoryOverrides(): MemoryOverrides {
  const byHead = new Map<string, OverrideEntry>();

  function live(head: string, now: number): OverrideEntry | undefined {
    // Most stores hold no override at all: spare the hot path a lookup (and a string hash).
    if (byHead.size === 0) return undefined;
    const entry = byHead.get(head);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= now) {
      byHead.delete(head);
      return undefined;
    }
    return entry;
  }

  return {
    live,
    set(prefix, key, value, expiresAt) {
      byHead.set(keyHead(prefix, key), { prefix, key, value, expiresAt });
    },
    clear(prefix, key) {
      byHead.delete(keyHead(prefix, key));
    },
    list(prefix, now) {
      const list: StoredOverride[] = [];
      for (const head of [...byHead.keys()]) {
        const entry = live(head, now);
        if (entry === undefined || entry.prefix !== prefix) continue;
        const expiresInMs = entry.expiresAt === undefined ? undefined : entry.expiresAt - now;
        list.push({ key: entry.key, value: entry.value, expiresInMs });
      }
      return list;
    },
  };
}
