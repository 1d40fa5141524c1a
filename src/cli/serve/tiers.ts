/**
 * Tiers at run time: the plan of a request, derived from its tier header, as a Fastify route
 * constraint, so each plan has its own routes (and limiters) and the router picks one.
 */
import type { IncomingMessage } from 'node:http';
import type { GatewayConfig } from '../config/schema.js';
import { sha256Hex } from '../config/schema.js';

export /** The plan of a request, from the tier header; undefined when the config has no tiers. */
function createPlanOf(config: GatewayConfig): ((req: IncomingMessage) => string) | undefined {
  const tiers = config.tiers;
  if (tiers === undefined) return undefined;
  return function planOf(req) {
    const raw = req.headers[tiers.header];
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (value === undefined || value === '') return tiers.default;
    if (tiers.keys !== undefined) return tiers.keys.get(sha256Hex(value)) ?? tiers.default;
    return config.plans.has(value) ? value : tiers.default;
  };
}

/** A find-my-way constraint strategy over `planOf`; routes without a plan constraint match any plan. */
export function planConstraint(planOf: (req: IncomingMessage) => string) {
  return {
    name: 'plan',
    storage() {
      const stores = new Map<string, unknown>();
      return {
        get: (plan: string) => (stores.get(plan) ?? null) as never,
        set: (plan: string, store: unknown) => {
          stores.set(plan, store);
        },
      };
    },
    deriveConstraint: (req: IncomingMessage) => planOf(req),
    mustMatchWhenDerived: false,
    validate(value: unknown) {
      if (typeof value !== 'string') throw new TypeError('plan constraint must be a plan name');
    },
  };
}
