/**
 * The Space-Saving sketch's index from key to counter: an open-addressing hash table (linear
 * probing, backward-shift deletion) in typed arrays of fixed size. A `Map` would allocate on every
 * key that takes another's counter and rehash as deletions pile up, which cost more than the rest
 * of an update; this table allocates nothing after it is made.
 */

const EMPTY = 0;

export interface KeyIndex {
  /** The key's hash, for `find` and `add` (keys are bounded in length, see boundedKey). */
  hashOf(key: string): number;
  /** The counter holding `key`, or -1. */
  find(key: string, hash: number): number;
  /** Indexes `counter`, whose key (in the sketch's `keys`) has `hash` and is not indexed yet. */
  add(counter: number, hash: number): void;
  /** Removes `counter`, which is indexed. */
  remove(counter: number): void;
}

/** An index over `keys` (the sketch's key of each counter) for up to `capacity` counters. */
export function createKeyIndex(keys: readonly (string | undefined)[], capacity: number): KeyIndex {
  // At most half full: probes stay short.
  let size = 2;
  while (size < capacity * 2) size *= 2;
  const mask = size - 1;
  // Each slot holds counter + 1, or EMPTY.
  const slots = new Int32Array(size);
  const hashes = new Int32Array(capacity);

  function slotOf(counter: number): number {
    let slot = (hashes[counter] as number) & mask;
    while (slots[slot] !== counter + 1) slot = (slot + 1) & mask;
    return slot;
  }

  return {
    hashOf(key) {
      // FNV-1a over the UTF-16 code units.
      let hash = 0x811c9dc5;
      for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
      return hash;
    },
    find(key, hash) {
      for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
        const held = slots[slot] as number;
        if (held === EMPTY) return -1;
        if (hashes[held - 1] === hash && keys[held - 1] === key) return held - 1;
      }
    },
    add(counter, hash) {
      hashes[counter] = hash;
      let slot = hash & mask;
      while (slots[slot] !== EMPTY) slot = (slot + 1) & mask;
      slots[slot] = counter + 1;
    },
    remove(counter) {
      // Backward shift: every later entry of the run that may sit in the hole moves into it.
      let hole = slotOf(counter);
      for (let slot = (hole + 1) & mask; slots[slot] !== EMPTY; slot = (slot + 1) & mask) {
        const home = (hashes[(slots[slot] as number) - 1] as number) & mask;
        // The entry may move back unless its home lies cyclically in (hole, slot].
        const stays = hole <= slot ? home > hole && home <= slot : home > hole || home <= slot;
        if (!stays) {
          slots[hole] = slots[slot] as number;
          hole = slot;
        }
      }
      slots[hole] = EMPTY;
    },
  };
}
