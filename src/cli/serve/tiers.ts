/**
 * Tiers at run time: the plan of a request, from its tier header. The adapter asks for it on
 * every check (`plan` option) and the route's limiter, built with every plan's rules, applies it.
 */
import type { IncomingMessage } from 'node:http';
import { type GatewayConfig, sha256Hex } from '../config/schema.js';

/** The plan of a request, from the tier header; undefined when the config has no tiers. */
export function createPlanOf(config: GatewayConfig): ((req: IncomingMessage) => string) | undefined {
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
