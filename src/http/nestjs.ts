/**
 * NestJS: `FloodgateGuard` (with `@RateLimit` and `@SkipRateLimit`) on the Express and Fastify
 * platforms, and `FloodgateThrottlerStorage` for applications that keep `@nestjs/throttler`.
 *
 * @example
 * import { NestFactory } from '@nestjs/core';
 * import { createLimiter } from 'floodgate';
 * import { FloodgateGuard } from 'floodgate/nestjs';
 *
 * const app = await NestFactory.create(AppModule);
 * app.useGlobalGuards(new FloodgateGuard({ limiter: createLimiter({ rules: { algorithm: 'gcra', limit: 10, window: '1s' } }) }));
 */
export type { HeaderStyle } from './headers.js';
export { type ApiKeyOrAddressOptions, apiKeyOrAddress } from './known-key.js';
export {
  FloodgateGuard,
  type FloodgateGuardOptions,
  type FloodgateRequest,
  RateLimit,
  type RouteRateLimitOptions,
  SkipRateLimit,
} from './nestjs-guard.js';
export { FloodgateThrottlerStorage, type FloodgateThrottlerStorageOptions } from './nestjs-throttler.js';
