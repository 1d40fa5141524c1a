/**
 * Floodgate: distributed API rate limiting for Node.js. The public API, and nothing else.
 * HTTP adapters live in their own entry points (`floodgate/express`, `floodgate/fastify`,
 * `floodgate/node`, `floodgate/fetch`) so importing this one never loads a framework.
 */
export type {
  AdaptiveLimit,
  AdaptiveLimitEvents,
  AdaptiveStats,
  Admission,
} from './adaptive/adaptive-limit.js';
export { createAdaptiveLimit } from './adaptive/adaptive-limit.js';
export type { AdaptiveLimitOptions, Criticality } from './adaptive/options.js';
export type { AlgorithmName } from './algorithms/index.js';
export type { CheckOptions } from './base/types.js';
export type { Decision, RuleDecision } from './core/decision.js';
export type {
  Override,
  OverrideAdmin,
  OverrideAdminOptions,
  OverrideEntry,
  OverrideOptions,
  OverrideSpec,
} from './core/overrides.js';
export { createOverrideAdmin } from './core/overrides.js';
export type { ThresholdEvent } from './core/thresholds.js';
export type { Duration } from './duration.js';
export { parseDuration } from './duration.js';
export { LimiterClosedError, QueueFullError, StoreClosedError, WaitTimeoutError } from './errors.js';
export type { ApiKeyOrAddress, ApiKeyOrAddressOptions } from './http/known-key.js';
export { apiKeyOrAddress } from './http/known-key.js';
export type { Limiter, LimiterEvents, LimiterOptions, RuleInfo } from './limiter.js';
export { createLimiter } from './limiter.js';
export type { RuleCounts, RuleOptions } from './rules.js';
export type {
  Grant,
  ScheduleOptions,
  Scheduler,
  SchedulerEvents,
  SchedulerFetchOptions,
  SchedulerOptions,
} from './scheduler/options.js';
export { createScheduler } from './scheduler/scheduler.js';
export type {
  HeaderDialect,
  ResponseLike,
  UpstreamBudget,
} from './scheduler/upstream-headers.js';
export type { MemoryStoreOptions } from './stores/memory/store.js';
export { memoryStore } from './stores/memory/store.js';
export type { RedisClientLike, ScriptRunner } from './stores/redis/client.js';
export type { RedisStore, RedisStoreOptions } from './stores/redis/store.js';
export { redisStore } from './stores/redis/store.js';
export type {
  CachedHead,
  Evaluated,
  EvaluateReply,
  InProcessPath,
  OverrideChanged,
  RuleOutcome,
  Store,
  StoredOverride,
  StoreWarning,
} from './stores/types.js';
export type { MeterLike } from './telemetry/meter.js';
export type { TopEntry } from './telemetry/space-saving.js';
export type { TopOptions } from './telemetry/telemetry.js';
