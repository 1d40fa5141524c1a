/**
 * Redis keys beside the rule state: the key's runtime override at `<prefix>:{<key>}:override`
 * (same slot, so a check reads it in the same script call), and the registry that lists every
 * override of a prefix at `<prefix>:overrides`.
 */

/** Where a key's runtime override is stored: in the key's own slot, beside its rule state. */
export function overrideKey(head: string): string {
  return `${head}:override`;
}

/** The hash listing every override under `prefix` (user key → stored override), for operators. */
export function overrideRegistryKey(prefix: string): string {
  return `${prefix}:overrides`;
}
