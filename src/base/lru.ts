/**
 * A least-recently-used map with O(1) get, set, delete and oldest-entry access, shared by the
 * memory store and the deny cache. A doubly linked list over a Map, rather than a Map re-inserted
 * on every use: V8 keeps deleted Map entries as holes until it rehashes, so walking a Map from its
 * oldest entry after many re-insertions costs O(holes) per call.
 */

/** An entry as `entry` hands it out: a handle that `touch` takes later instead of a lookup by key. */
export interface LruEntry<V> {
  readonly key: string;
  readonly value: V;
}

interface Node<V> extends LruEntry<V> {
  value: V;
  older: Node<V> | undefined;
  newer: Node<V> | undefined;
  /** False once removed: a handle to it is stale, and the key may have a new entry since. */
  live: boolean;
}

export interface Lru<V> {
  readonly size: number;
  /** The value, marked as most recently used. */
  get(key: string): V | undefined;
  /** The entry (a handle for `touch`), marked as most recently used. */
  entry(key: string): LruEntry<V> | undefined;
  /**
   * Marks an entry from `entry` as most recently used, as `get` of its key would, without the
   * lookup. False when it was removed since (its key may have another entry now): look it up again.
   */
  touch(entry: LruEntry<V>): boolean;
  /** Stores the value as most recently used; drops the least recently used past `maxSize`. */
  set(key: string, value: V): void;
  delete(key: string): void;
  /** The least recently used entry, without touching it (a live view: read it before changing the map). */
  oldest(): { readonly key: string; readonly value: V } | undefined;
}

export function createLru<V>(maxSize: number): Lru<V> {
  const nodes = new Map<string, Node<V>>();
  let oldest: Node<V> | undefined;
  let newest: Node<V> | undefined;

  function unlink(node: Node<V>): void {
    if (node.older === undefined) oldest = node.newer;
    else node.older.newer = node.newer;
    if (node.newer === undefined) newest = node.older;
    else node.newer.older = node.older;
    node.older = undefined;
    node.newer = undefined;
  }

  function append(node: Node<V>): void {
    node.older = newest;
    if (newest === undefined) oldest = node;
    else newest.newer = node;
    newest = node;
  }

  function remove(node: Node<V>): void {
    unlink(node);
    node.live = false;
    nodes.delete(node.key);
  }

  function use(node: Node<V>): void {
    if (node !== newest) {
      unlink(node);
      append(node);
    }
  }

  return {
    get size() {
      return nodes.size;
    },
    get(key) {
      const node = nodes.get(key);
      if (node === undefined) return undefined;
      use(node);
      return node.value;
    },
    entry(key) {
      const node = nodes.get(key);
      if (node !== undefined) use(node);
      return node;
    },
    touch(entry) {
      const node = entry as Node<V>;
      if (!node.live) return false;
      use(node);
      return true;
    },
    set(key, value) {
      const node = nodes.get(key);
      if (node !== undefined) {
        node.value = value;
        use(node);
        return;
      }
      const created: Node<V> = { key, value, older: undefined, newer: undefined, live: true };
      nodes.set(key, created);
      append(created);
      if (nodes.size > maxSize && oldest !== undefined) remove(oldest);
    },
    delete(key) {
      const node = nodes.get(key);
      if (node !== undefined) remove(node);
    },
    oldest() {
      return oldest;
    },
  };
}
