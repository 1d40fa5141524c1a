/**
 * The one internal entry point: what the `floodgate` command needs beyond the public API
 * (rule parsing, the Redis key layout and script, the HTTP key and header pieces). Not exported
 * by the package; the CLI imports the public API from index.ts and everything else from here.
 */
export { endAdmission } from './adaptive/ending.js';
export { CRITICALITIES, TUNING_OPTIONS } from './adaptive/options.js';
export { BLOCK_SUFFIX } from './algorithms/block.js';
export { ALGORITHM_NAMES, ALGORITHMS, RATE_ALGORITHM_NAMES } from './algorithms/index.js';
export { SLIDING_LOG_MAX_LIMIT } from './algorithms/sliding-log.js';
export { keyHead, resolvePrefix } from './base/key-encoding.js';
export type { ResolvedRule } from './base/types.js';
export { formatLocal } from './calendar/index.js';
export { decodeOverride } from './core/overrides.js';
export { describe } from './describe.js';
export { bodyPending } from './http/adaptive.js';
export { HEADER_STYLES, type HeaderStyle, rateLimitHeaders } from './http/headers.js';
export { DEFAULT_IPV6_SUBNET } from './http/ip.js';
export { PROBLEM_CONTENT_TYPE } from './http/problem.js';
export { parseTrustProxy } from './http/proxy.js';
export { addressKey, hashApiKey, UNKNOWN_CLIENT } from './http/request-keys.js';
export { formatDuration, MAX_UNITS_TIMES_WINDOW, resolveRules } from './rules.js';
export { overrideKey } from './stores/redis/key-layout.js';
export { scriptFor } from './stores/redis/script.js';
export { fleetTop } from './telemetry/fleet.js';
export { mergeTop } from './telemetry/heavy-hitters.js';
export { timedStore } from './telemetry/timed-store.js';
