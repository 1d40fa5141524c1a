/**
 * The gateway's limiters: one per distinct rule list (routes that only inherit their plan share
 * its limiter, and its deny cache), all on the one store, with their events turned into logs and
 * metrics.
 */
import { createLimiter, type Limiter } from '../../limiter.js';
import type { RuleOptions } from '../../rules.js';
import type { GatewayParts } from './gateway.js';

export function createLimiterCache(parts: GatewayParts) {
  const { config, logger, metrics } = parts;
  const cache = new Map<string, Limiter>();
  let lastDegradedLog = 0;
  return {
    get(rules: readonly RuleOptions[]): Limiter {
      const signature = JSON.stringify(rules);
      let limiter = cache.get(signature);
      if (limiter === undefined) {
        limiter = createLimiter({
          rules,
          store: parts.store.store,
          prefix: config.prefix,
          timeout: config.storeTimeoutMs,
          onStoreError: config.onStoreError,
        });
        limiter.on('storeError', () => metrics.storeErrors.inc());
        limiter.on('degraded', ({ reason, cause }) => {
          const now = Date.now();
          if (now - lastDegradedLog < 1000) return;
          lastDegradedLog = now;
          logger.warn('store_degraded', { reason, policy: config.onStoreError, error: cause });
        });
        limiter.on('recovered', () => logger.info('store_recovered', { store: parts.store.label }));
        cache.set(signature, limiter);
      }
      return limiter;
    },
  };
}
