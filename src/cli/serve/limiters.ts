/**
 * The gateway's limiters: one per distinct set of rules (routes that only inherit their plans
 * share a limiter, and its deny cache), all on the one store, with their events turned into logs
 * and metrics. With tiers a limiter holds every plan's rules (`plans`) and each check names one;
 * otherwise it holds the one rule list.
 */
import {
  createLimiter,
  type Limiter,
  type LimiterOptions,
  type RuleOptions,
  type TopEntry,
} from '../../index.js';
import { mergeTop } from '../../internal.js';
import { DEFAULT_PLAN, type GatewayConfig } from '../config/schema.js';
import type { Logger } from './log.js';
import type { GatewayMetrics } from './metrics.js';
import type { StoreHandle } from './store.js';

/** What a generation's limiters are built from; the gateway's parts (gateway.ts) extend it. */
export interface LimiterParts {
  config: GatewayConfig;
  store: StoreHandle;
  metrics: GatewayMetrics;
  logger: Logger;
  /** An OpenTelemetry meter the limiters record through too (see otel.ts). */
  meter?: LimiterOptions['meter'];
}

/** Counters of each limiter's heavy-hitter sketch (the limiter's default). */
export const TOP_KEYS = 1000;

export function createLimiterCache(parts: LimiterParts) {
  const { config, logger, metrics } = parts;
  const cache = new Map<string, Limiter>();
  let lastDegradedLog = 0;

  function cached(signature: string, rules: () => Pick<LimiterOptions, 'rules' | 'plans' | 'defaultPlan'>) {
    let limiter = cache.get(signature);
    if (limiter === undefined) {
      limiter = createLimiter({
        ...rules(),
        store: parts.store.store,
        prefix: config.prefix,
        timeout: config.storeTimeoutMs,
        onStoreError: config.onStoreError,
        shadow: config.shadow,
        topKeys: TOP_KEYS,
        ...(parts.meter !== undefined ? { meter: parts.meter } : {}),
      });
      limiter.on('storeError', () => metrics.storeErrors.inc());
      limiter.on('degraded', ({ reason, cause }) => {
        const now = Date.now();
        if (now - lastDegradedLog < 1000) return;
        lastDegradedLog = now;
        logger.warn('store_degraded', { reason, policy: config.onStoreError, error: cause });
      });
      limiter.on('recovered', () => logger.info('store_recovered', { store: parts.store.label }));
      limiter.on('warning', (warning) => parts.store.report(warning));
      // Once per key, rule, threshold and period across every gateway on the store (decided in its script).
      limiter.on('threshold', (event) => {
        metrics.thresholds.inc({ rule: event.rule, threshold: String(event.threshold) });
        logger.info('threshold', { ...event });
      });
      cache.set(signature, limiter);
    }
    return limiter;
  }

  return {
    /** The limiter of a route's rules per plan (see RouteSpec.rules). */
    get(rulesByPlan: ReadonlyMap<string, readonly RuleOptions[]>): Limiter {
      const tiers = config.tiers;
      return cached(JSON.stringify([...rulesByPlan]), () =>
        tiers === undefined
          ? { rules: rulesByPlan.get(DEFAULT_PLAN) ?? [] }
          : { plans: Object.fromEntries(rulesByPlan), defaultPlan: tiers.default },
      );
    },
    /** The limiter of a plain rule list, outside plans (the Envoy rate limit service's limits). */
    forRules(rules: readonly RuleOptions[]): Limiter {
      return cached(JSON.stringify({ rules }), () => ({ rules }));
    },
    /**
     * The keys this generation's limiters checked or denied most, most first (with `fleet`, every
     * process's on the store, as of their last merges). A limiter's list of
     * TOP_KEYS entries bounds every key it leaves out by its last count (0 when it is shorter),
     * which keeps `count - error <= true <= count` for the sum over limiters.
     */
    async top(by: 'denied' | 'checked', limit: number, fleet = false): Promise<TopEntry[]> {
      // Every limiter merges into the one sketch of the gateway's prefix: any of them reads the fleet's.
      const [any] = cache.values();
      if (fleet) return any === undefined ? [] : any.top({ by, limit, fleet: true });
      const lists = await Promise.all(
        [...cache.values()].map((limiter) => limiter.top({ by, limit: TOP_KEYS })),
      );
      const floors = lists.map((list) =>
        list.length === TOP_KEYS ? (list[TOP_KEYS - 1] as TopEntry).count : 0,
      );
      return mergeTop(lists, floors, limit);
    },
    /**
     * Closes every limiter once the calls under way on it have settled: their quota slices' unused
     * units and the concurrency slots they hold go back to the store, which must still be open.
     */
    async close(): Promise<void> {
      await Promise.all([...cache.values()].map((limiter) => limiter.close()));
    },
  };
}

export type LimiterCache = ReturnType<typeof createLimiterCache>;
