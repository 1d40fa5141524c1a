/**
 * The gateway's adaptive concurrency limit in front of the upstream (`adaptive`, `--adaptive`),
 * and the criticality of requests (`priorityHeader`, a route's `priority`). The limit's own
 * options are checked by createAdaptiveLimit itself, its messages renamed to the config's field.
 */
import { type AdaptiveLimitOptions, type Criticality, createAdaptiveLimit } from '../../index.js';
import { CRITICALITIES, TUNING_OPTIONS } from '../../internal.js';
import { ConfigError, type Fields, fail, HEADER_NAME, join, objectAt, oneOf, stringAt } from './check.js';

/** `adaptive: true | { min, max, ... }`: the limit's options, or undefined when it is off. */
export function parseAdaptive(value: unknown, path: string): AdaptiveLimitOptions | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return {};
  const fields: Fields = objectAt(value, path, TUNING_OPTIONS);
  const options = fields as AdaptiveLimitOptions;
  try {
    createAdaptiveLimit(options);
  } catch (error) {
    if (!(error instanceof TypeError || error instanceof RangeError)) throw error;
    throw new ConfigError(error.message.replace(/^createAdaptiveLimit: /, `${path}.`));
  }
  return options;
}

/** The header carrying a request's criticality (its values: critical, standard, sheddable). */
export function parsePriorityHeader(value: unknown, path: string): string | undefined {
  if (value === undefined) return undefined;
  return stringAt(value, path, HEADER_NAME, 'must be an HTTP header name').toLowerCase();
}

/** A route's criticality. */
export function parsePriority(value: unknown, path: string): Criticality | undefined {
  if (value === undefined) return undefined;
  return oneOf(value, path, CRITICALITIES);
}

/** What the priority check needs of a route. */
interface PrioritizedRoute {
  readonly where: string;
  readonly priority: Criticality | undefined;
  readonly adaptive: AdaptiveLimitOptions | undefined;
}

/**
 * Checks that a criticality only matters where an adaptive limit is on: a route's priority needs
 * the upstream's or the route's own, the priority header and plans' priorities one somewhere.
 */
export function checkPriorityUse(
  adaptive: AdaptiveLimitOptions | undefined,
  header: string | undefined,
  routes: readonly PrioritizedRoute[],
  planPriorities: ReadonlyMap<string, Criticality>,
): void {
  const hint = 'a criticality only matters with the adaptive limit: set adaptive (or --adaptive) too';
  if (adaptive !== undefined) return;
  const unlimited = routes.find((route) => route.priority !== undefined && route.adaptive === undefined);
  if (unlimited !== undefined) fail(`${unlimited.where}.priority`, hint);
  if (routes.some((route) => route.adaptive !== undefined)) return;
  if (header !== undefined) fail(header, hint);
  const [plan] = planPriorities.keys();
  if (plan !== undefined) fail(join(join('plans', plan), 'priority'), hint);
}
