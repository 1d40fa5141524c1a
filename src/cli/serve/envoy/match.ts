/**
 * Which configured limit applies to a descriptor, as envoyproxy/ratelimit decides it: walk the
 * domain's tree entry by entry, preferring `key_value`, then a `key_value*` prefix, then `key`
 * alone; the limit applies only when the descriptor ends exactly at a node that has one. Then
 * `replaces`: a limit named by another matched limit's `replaces` does not apply.
 */
import type { RlsDomain, RlsLimit, RlsNode } from '../../config/rls.js';

export interface Entry {
  readonly key: string;
  readonly value: string;
}

/** The limit of one descriptor, or undefined when none applies. */
export function limitOf(domain: RlsDomain, entries: readonly Entry[]): RlsLimit | undefined {
  let level: RlsNode = domain;
  for (const [index, entry] of entries.entries()) {
    const next = childOf(level, entry);
    if (next === undefined) return undefined;
    if (index === entries.length - 1) return next.limit;
    level = next;
  }
  return undefined;
}

function childOf(level: RlsNode, { key, value }: Entry): RlsNode | undefined {
  const exact = `${key}_${value}`;
  const found = level.children.get(exact);
  if (found !== undefined) return found;
  for (const wildcard of level.wildcards) {
    if (exact.startsWith(wildcard.slice(0, -1))) return level.children.get(wildcard);
  }
  return level.children.get(key);
}

/** Each descriptor's limit after `replaces`: a replaced limit becomes undefined. */
export function applyReplaces(limits: readonly (RlsLimit | undefined)[]): (RlsLimit | undefined)[] {
  const replaced = new Set(limits.flatMap((limit) => limit?.replaces ?? []));
  if (replaced.size === 0) return [...limits];
  return limits.map((limit) => (limit?.name !== undefined && replaced.has(limit.name) ? undefined : limit));
}
