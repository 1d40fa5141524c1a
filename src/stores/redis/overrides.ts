/**
 * Overrides on Redis: each key's own copy beside its rule state (the truth checks read, see
 * key-layout.ts) and the prefix's registry that lists them.
 */
import { keyHead } from '../../base/key-encoding.js';
import { describe } from '../../describe.js';
import type { Store, StoredOverride } from '../types.js';
import type { Run } from './calls.js';
import { overrideKey, overrideRegistryKey } from './key-layout.js';
import { BASE_SCRIPT } from './script.js';

export type RedisOverrides = Pick<Store, 'setOverride' | 'clearOverride' | 'listOverrides'>;

/** @param now the clock argument every script call takes ('-1': the server's TIME). */
export function redisOverrides(run: Run, now: () => string): RedisOverrides {
  return {
    async setOverride(prefix, key, value, ttlMs) {
      const expiresAt = await run(
        BASE_SCRIPT,
        [overrideKey(keyHead(prefix, key))],
        ['o', String(ttlMs ?? 0), now(), value],
      );
      // The key's own copy is the truth checks read; the registry only lists it.
      await run(BASE_SCRIPT, [overrideRegistryKey(prefix)], ['g', key, '', `${expiresAt}:${value}`]);
    },
    async clearOverride(prefix, key) {
      await run(BASE_SCRIPT, [overrideKey(keyHead(prefix, key))], ['x']);
      await run(BASE_SCRIPT, [overrideRegistryKey(prefix)], ['d', key]);
    },
    async listOverrides(prefix) {
      const reply = await run(BASE_SCRIPT, [overrideRegistryKey(prefix)], ['l', '', now()]);
      if (!Array.isArray(reply) || reply.length % 3 !== 0) {
        throw new Error(`floodgate: unexpected reply from the Redis script: ${describe(reply)}`);
      }
      const list: StoredOverride[] = [];
      for (let i = 0; i < reply.length; i += 3) {
        const remaining = Number(reply[i + 1]);
        list.push({
          key: String(reply[i]),
          value: String(reply[i + 2]),
          expiresInMs: remaining < 0 ? undefined : remaining,
        });
      }
      return list;
    },
  };
}
