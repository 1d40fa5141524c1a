/**
 * Heads of recently checked keys, per limiter. The same head string object then reaches every
 * map keyed by it (deny cache, overrides) with its hash already computed, which a freshly built
 * head would have to compute again. With an in-process store, the entry also keeps the store's
 * handle to the key's state (see Store.inProcess), so it is bounded by the store's own bound:
 * with fewer, checks cycling through more active keys than this cache holds would all miss it.
 * Bounded by clearing when full; long keys (digested, and memory an attacker would choose) are
 * not kept.
 */

import { encodeKey, headOf, MAX_ENCODED_KEY } from '../base/key-encoding.js';
import { describe } from '../describe.js';
import type { CachedHead } from '../stores/types.js';

/**
 * Key heads remembered per limiter: ~2 MB for IP-sized keys, ~7 MB at worst (128-character
 * keys). A limiter on a memory store remembers as many as the store keeps states.
 */
const HEAD_CACHE_KEYS = 16_384;

/** The cached head of a key; throws a TypeError for a key that is not a non-empty string. */
export type HeadCache = (key: unknown) => CachedHead;

/** @param storeKeys the in-process store's bound on keys, if any (see InProcessPath.maxKeys). */
export function createHeadCache(prefix: string, storeKeys: number | undefined): HeadCache {
  const capacity = Math.max(HEAD_CACHE_KEYS, storeKeys ?? 0);
  const heads = new Map<string, CachedHead>();
  return function cachedHead(key) {
    if (typeof key !== 'string' || key.length === 0) {
      throw new TypeError(`key: expected a non-empty string, got ${describe(key)}`);
    }
    let cached = heads.get(key);
    if (cached === undefined) {
      const encoded = encodeKey(key);
      cached = { head: headOf(prefix, encoded), prefix, encoded, handle: undefined };
      if (key.length <= MAX_ENCODED_KEY) {
        if (heads.size >= capacity) heads.clear();
        heads.set(key, cached);
      }
    }
    return cached;
  };
}
