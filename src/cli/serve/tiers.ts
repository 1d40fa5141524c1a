/**
 * Tiers at run time: the plan of a request, from its tier header. The adapter asks for it on
 * every check (`plan` option) and the route's limiter, built with every plan's rules, applies it.
 * The tier keys are also the only API keys that count on their own (`keyOption`).
 */
import type { IncomingMessage } from 'node:http';
import type { FloodgateOptions } from '../../http/fastify.js';
import { apiKeyOrAddress } from '../../index.js';
import { type GatewayConfig, sha256Hex } from '../config/schema.js';

/** The plan of a request, from the tier header; undefined when the config has no tiers. */
export function createPlanOf(
  config: Pick<GatewayConfig, 'tiers' | 'plans'>,
): ((req: IncomingMessage) => string) | undefined {
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

/**
 * The limiter key: an API key only when `tiers.keys` lists it (read from the tier header), else
 * the client address, exactly as for a request without one. No tiers keys, no API keys.
 */
export function keyOption(config: GatewayConfig): Pick<FloodgateOptions, 'key' | 'apiKeyHeader'> {
  const tiers = config.tiers;
  const keys = tiers?.keys;
  if (tiers === undefined || keys === undefined || config.apiKeyHeader === false) {
    return { apiKeyHeader: false };
  }
  return { key: apiKeyOrAddress({ header: tiers.header, known: (key) => keys.has(sha256Hex(key)) }) };
}
