/**
 * What a running `serve` holds, shared by start (command.ts), reloads (reload.ts) and shutdown
 * (signals.ts): the process-wide parts, the current generation, and how one is built.
 */
import type { Server } from 'node:http';
import { type Parsed, stringOption } from '../args.js';
import { ConfigError } from '../config/check.js';
import type { GatewayConfig } from '../config/schema.js';
import { type AdaptiveHolder, anyLimit } from './adaptive.js';
import type { AdminListener } from './admin.js';
import type { GrpcListener } from './envoy/grpc.js';
import { buildGateway, type Gateway, type GatewayParts } from './gateway.js';
import type { Logger } from './log.js';
import type { GatewayMetrics } from './metrics.js';
import type { GatewayOtel } from './otel.js';
import type { StoreHandle } from './store.js';

/** What every generation shares for the life of the process. */
export interface Shared {
  logger: Logger;
  metrics: GatewayMetrics;
  /** HMAC secret for API keys in limiter keys (FLOODGATE_API_KEY_SECRET). */
  apiKeySecret: string | undefined;
  /** The adaptive limit, kept across reloads that leave its settings as they were. */
  adaptive: AdaptiveHolder;
  /** OpenTelemetry, when the environment configures it (otel.ts). */
  otel?: GatewayOtel | undefined;
}

/** A running gateway: the listening server, and the parts a reload replaces or shutdown closes. */
export interface Running {
  readonly parsed: Parsed;
  readonly shared: Shared;
  readonly server: Server;
  readonly admin: AdminListener | undefined;
  readonly grpc: GrpcListener | undefined;
  config: GatewayConfig;
  store: StoreHandle;
  gateway: Gateway;
  /** Replaced generations still finishing their requests. */
  readonly retiring: Set<Gateway>;
  /** Set on SIGTERM/SIGINT: every response then closes its connection. */
  draining: boolean;
}

/**
 * Builds a gateway generation; a config mistake found while building (a route pattern the
 * router refuses) names the config file, as the config's own errors do.
 */
export async function buildNamed(parsed: Parsed, parts: GatewayParts): Promise<Gateway> {
  try {
    return await buildGateway(parts);
  } catch (error) {
    const file = stringOption(parsed, 'config');
    if (error instanceof ConfigError && file !== undefined)
      throw new ConfigError(`${file}: ${error.message}`);
    throw error;
  }
}

export function partsOf(config: GatewayConfig, store: StoreHandle, shared: Shared): GatewayParts {
  const { logger, metrics, apiKeySecret, otel } = shared;
  const adaptive = shared.adaptive.limitsFor(config);
  return {
    config,
    store,
    logger,
    metrics,
    ...(apiKeySecret ? { apiKeySecret } : {}),
    ...(anyLimit(adaptive) ? { adaptive } : {}),
    ...(otel !== undefined ? { meter: otel.meter } : {}),
  };
}
