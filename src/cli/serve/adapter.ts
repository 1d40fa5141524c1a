/**
 * The Fastify adapter (`floodgate/fastify`, src/http/fastify.ts) as the gateway uses it. It is
 * loaded at run time, so this command builds and its other parts work even where the adapter
 * is absent, and `serve` says clearly what is missing. Only the part of its contract the
 * gateway relies on is spelled out here.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Decision } from '../../decision.js';
import type { Limiter } from '../../limiter.js';
import { RuntimeFailure } from '../args.js';
import type { HeaderStyle } from '../config/schema.js';

/** Options of one route's limiter: `config: { rateLimit: RouteRateLimit | false }`. */
export interface RouteRateLimit {
  limiter: Limiter;
  cost?: number;
}

/** The plugin options the gateway passes: `await app.register(floodgate, options)`. */
export interface AdapterOptions {
  /** false: only routes with `config.rateLimit` are limited, each by its own limiter. */
  global: boolean;
  headers: HeaderStyle | false | readonly HeaderStyle[];
  apiKeyHeader: string | false;
  apiKeySecret?: string;
  onDecision: (request: FastifyRequest, decision: Decision) => void;
}

export type FloodgatePlugin = (app: FastifyInstance, options: AdapterOptions) => Promise<void>;

const ADAPTER = '../../http/fastify.js';

export async function loadFastifyAdapter(): Promise<FloodgatePlugin> {
  let module: { floodgate?: unknown };
  try {
    // A variable specifier: resolved at run time only (see the header comment).
    const specifier: string = ADAPTER;
    module = (await import(specifier)) as { floodgate?: unknown };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new RuntimeFailure(
        `serve needs the Fastify adapter (floodgate/fastify) and the 'fastify' package: ${(error as Error).message.split('\n')[0]}`,
      );
    }
    throw error;
  }
  if (typeof module.floodgate !== 'function') {
    throw new RuntimeFailure('serve: the Fastify adapter does not export floodgate');
  }
  return module.floodgate as FloodgatePlugin;
}

/** The decision the adapter attached to a request (`request.rateLimit`), if any. */
export function decisionOf(request: FastifyRequest): Decision | undefined {
  return (request as FastifyRequest & { rateLimit?: Decision }).rateLimit;
}
