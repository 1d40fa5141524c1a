/**
 * A least-recently-used map with O(1) get, set, delete and oldest-entry access, shared by the
 * memory store and the deny cache. A doubly linked list over a Map, rather than a Map re-inserted
 * on every use: V8 keeps deleted Map entries as holes until it rehashes, so walking a Map from its
 * oldest entry after many re-insertions costs O(holes) per call.
 */

interface Node<V> {
  key: string;
  value: V;
  older: Node<V> | undefined;
  newer: Node<V> | undefined;
}

export interface Lru<V> {
  readonly size: number;
  /** The value, marked as most recently used. */
  get(key: string): V | undefined;
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
    nodes.delete(node.key);
  }

  return {
    get size() {
      return nodes.size;
    },
    get(key) {
      const node = nodes.get(key);
      if (node === undefined) return undefined;
      if (node !== newest) {
        unlink(node);
        append(node);
      }
      return node.value;
    },
    set(key, value) {
      const node = nodes.get(key);
      if (node !== undefined) {
        node.value = value;
        if (node !== newest) {
          unlink(node);
          append(node);
        }
        return;
      }
      const created: Node<V> = { key, value, older: undefined, newer: undefined };
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
