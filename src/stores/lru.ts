/**
 * A string-keyed map that keeps its entries in order of use, every operation O(1): entries sit
 * on a doubly linked list, least recently used first. The usual shortcut, deleting and
 * re-inserting into a `Map` on every use, is O(n) per use of one hot key in V8: each delete
 * leaves a tombstone on that key's hash chain until the next rehash, and every later lookup
 * of the key walks them all.
 */

export interface LruEntry<V> {
  readonly key: string;
  value: V;
  /** The next less recently used entry. */
  older: LruEntry<V> | undefined;
  /** The next more recently used entry. */
  newer: LruEntry<V> | undefined;
}

export interface LruMap<V> {
  readonly size: number;
  /** The least recently used entry; follow `newer` to walk towards the most recent. */
  readonly oldest: LruEntry<V> | undefined;
  /** The entry of `key` without marking it used. */
  get(key: string): LruEntry<V> | undefined;
  /** Marks an entry as the most recently used. */
  touch(entry: LruEntry<V>): void;
  /** Sets the value of `key` and marks it the most recently used. */
  set(key: string, value: V): void;
  delete(key: string): void;
}

export function createLruMap<V>(): LruMap<V> {
  const entries = new Map<string, LruEntry<V>>();
  let oldest: LruEntry<V> | undefined;
  let newest: LruEntry<V> | undefined;

  function unlink(entry: LruEntry<V>): void {
    if (entry.older === undefined) oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) newest = entry.older;
    else entry.newer.older = entry.older;
    entry.older = undefined;
    entry.newer = undefined;
  }

  function append(entry: LruEntry<V>): void {
    entry.older = newest;
    if (newest === undefined) oldest = entry;
    else newest.newer = entry;
    newest = entry;
  }

  function touch(entry: LruEntry<V>): void {
    if (entry === newest) return;
    unlink(entry);
    append(entry);
  }

  return {
    get size() {
      return entries.size;
    },
    get oldest() {
      return oldest;
    },
    get: (key) => entries.get(key),
    touch,
    set(key, value) {
      const entry = entries.get(key);
      if (entry !== undefined) {
        entry.value = value;
        touch(entry);
        return;
      }
      const added: LruEntry<V> = { key, value, older: undefined, newer: undefined };
      entries.set(key, added);
      append(added);
    },
    delete(key) {
      const entry = entries.get(key);
      if (entry === undefined) return;
      unlink(entry);
      entries.delete(key);
    },
  };
}
