/**
 * Runtime overrides: an operator gives one key other rules, another plan, or a block, shared by
 * every process through the store. The store keeps each override as an opaque string (the
 * canonical JSON made here) in the key's own slot; a check sends the value it last saw and the
 * store answers "changed" instead of deciding when it differs, so a change is seen by every
 * process on its next check of the key, and a key without an override costs one GET inside the
 * check script. Processes remember the overrides they have seen in a bounded LRU.
 */

import { resolvePrefix } from '../base/key-encoding.js';
import type { Degraded, ResolvedRule } from '../base/types.js';
import { describe } from '../describe.js';
import { type Duration, parseDuration } from '../duration.js';
import { type RuleOptions, resolveRules } from '../rules.js';
import type { Store } from '../stores/types.js';
import type { Decision } from './decision.js';
import { type Plans, type RuleSet, ruleSet } from './plans.js';

/** What `setOverride` accepts: rules (one or several), a plan's name, or `{ block: true }`. */
export type Override = RuleOptions | readonly RuleOptions[] | string | { readonly block: true };

/** An override as stored and listed: normalized (rule windows in ms, every rule named). */
export type OverrideSpec = { rules: RuleOptions[] } | { plan: string } | { block: true };

export interface OverrideOptions {
  /** How long the override lasts (ms or a duration string). Default: until cleared. */
  ttl?: Duration;
}

/** One override, as `listOverrides` returns it. */
export interface OverrideEntry {
  /** The user's key, as given to `check`. */
  key: string;
  /** The override, or undefined if the stored value cannot be read (then `value` shows it). */
  override: OverrideSpec | undefined;
  /** The stored value (canonical JSON). */
  value: string;
  /** Milliseconds until it expires; undefined when it lasts until cleared. */
  expiresInMs: number | undefined;
}

export interface OverrideAdminOptions {
  /** The store the limiters use. */
  store: Store;
  /** The limiters' prefix. Default `'floodgate'`. */
  prefix?: string;
  /** Plan names an override may name; when given, others are rejected. */
  plans?: readonly string[];
}

/** Sets, clears and lists overrides in a store, without a limiter (the CLI's `override` command). */
export interface OverrideAdmin {
  set(key: string, override: Override, options?: OverrideOptions): Promise<void>;
  clear(key: string): Promise<void>;
  list(): Promise<OverrideEntry[]>;
}

/**
 * Makes an override admin for operators' tools. Limiters expose the same operations as
 * `setOverride`, `clearOverride` and `listOverrides`.
 * @example
 * const admin = createOverrideAdmin({ store: redisStore({ client }), prefix: 'api' });
 * await admin.set('org_9921', 'enterprise', { ttl: '7d' });
 * await admin.set('abuser', { block: true }, { ttl: '1h' });
 */
export function createOverrideAdmin(options: OverrideAdminOptions): OverrideAdmin {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`createOverrideAdmin: expected options { store, prefix? }, got ${describe(options)}`);
  }
  const { store, plans } = options;
  if (typeof store?.setOverride !== 'function') {
    throw new TypeError(
      `store: expected memoryStore(), redisStore({ client }) or another Store, got ${describe(store)}`,
    );
  }
  const prefix = resolvePrefix(options.prefix);
  return {
    async set(key, override, setOptions) {
      const value = encodeOverride(override, plans);
      const ttl = setOptions?.ttl;
      await store.setOverride(
        prefix,
        userKey(key),
        value,
        ttl === undefined ? undefined : parseDuration(ttl, 'ttl'),
      );
    },
    async clear(key) {
      await store.clearOverride(prefix, userKey(key));
    },
    async list() {
      return (await store.listOverrides(prefix)).map(({ key, value, expiresInMs }) => {
        let override: OverrideSpec | undefined;
        try {
          override = decodeOverride(value);
        } catch {
          override = undefined;
        }
        return { key, override, value, expiresInMs };
      });
    },
  };
}

function userKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(`key: expected a non-empty string, got ${describe(key)}`);
  }
  return key;
}

/** Validates an override and renders its canonical JSON (the value stores keep and compare). */
export function encodeOverride(override: unknown, plans?: readonly string[]): string {
  if (typeof override === 'string') {
    if (plans !== undefined && !plans.includes(override)) {
      const known = plans.length === 0 ? 'this limiter has no plans' : `the plans are ${plans.join(', ')}`;
      throw new RangeError(`override: unknown plan ${JSON.stringify(override)}; ${known}`);
    }
    if (override.length === 0) throw new RangeError('override: a plan name cannot be empty');
    return JSON.stringify({ plan: override });
  }
  if (typeof override === 'object' && override !== null && !Array.isArray(override) && 'block' in override) {
    if ((override as { block: unknown }).block !== true || Object.keys(override).length !== 1) {
      throw new TypeError('override: a block is exactly { block: true }');
    }
    return JSON.stringify({ block: true });
  }
  if (typeof override !== 'object' || override === null) {
    throw new TypeError(
      `override: expected rules, a plan name or { block: true }, got ${describe(override)}`,
    );
  }
  return JSON.stringify({ rules: resolveRules(override, 'override').map(ruleOptionsOf) });
}

function ruleOptionsOf(rule: ResolvedRule): RuleOptions {
  const { periods } = rule;
  const options: RuleOptions = { name: rule.name, algorithm: rule.algorithm.name, limit: rule.limit };
  if (periods === undefined) options.window = rule.windowMs;
  else {
    options.period = periods.period;
    options.timeZone = periods.timeZone;
    if (periods.anchor !== undefined) options.anchor = periods.anchor;
  }
  if (rule.thresholds !== undefined) options.thresholds = rule.thresholds;
  if (rule.capacity !== rule.limit) options.burst = rule.capacity;
  if (rule.counts === 'requests') options.counts = 'requests';
  return options;
}

/** Whether an override (already validated) gives rules counted by calendar period. */
export function namesCalendarRule(override: Override): boolean {
  if (typeof override !== 'object' || 'block' in override) return false;
  const rules: readonly RuleOptions[] = Array.isArray(override) ? override : [override as RuleOptions];
  return rules.some((rule) => rule.period !== undefined);
}

/** Reads a stored override; throws when it is not one (another tool wrote it, or a newer version). */
export function decodeOverride(value: string): OverrideSpec {
  const parsed: unknown = JSON.parse(value);
  if (typeof parsed === 'object' && parsed !== null) {
    const fields = Object.keys(parsed);
    const spec = parsed as Record<string, unknown>;
    if (fields.length === 1 && spec.block === true) return { block: true };
    if (fields.length === 1 && typeof spec.plan === 'string') return { plan: spec.plan };
    if (fields.length === 1 && Array.isArray(spec.rules)) return { rules: spec.rules as RuleOptions[] };
  }
  throw new TypeError(`not a floodgate override: ${value.slice(0, 200)}`);
}

/** An override as a limiter applies it. */
export interface KnownOverride {
  /** The stored value, sent with each check so the store can tell when it changes. */
  readonly value: string;
  readonly block: boolean;
  /** The rules to run instead of the plan's; undefined for a block or an override being ignored. */
  readonly set: RuleSet | undefined;
  /** When it expires on the local clock, as of the last check (for decisions without the store). */
  expiresAt: number | undefined;
}

/** Resolves a stored override against a limiter's plans; throws if it cannot apply. */
export function resolveOverride(value: string, plans: Plans): KnownOverride {
  const spec = decodeOverride(value);
  if ('block' in spec) return { value, block: true, set: undefined, expiresAt: undefined };
  if ('plan' in spec) {
    const set = plans.get(spec.plan);
    if (set === undefined) {
      throw new RangeError(
        `override names the plan ${JSON.stringify(spec.plan)}, which this limiter does not have`,
      );
    }
    return { value, block: false, set, expiresAt: undefined };
  }
  const set = ruleSet(resolveRules(spec.rules, 'override', plans.shadow), undefined, 'override');
  return { value, block: false, set, expiresAt: undefined };
}

/**
 * Takes in the override a store says a key now has (undefined: none) and returns it as known;
 * one that cannot apply is reported through `invalid` and known as no override (not a block).
 */
export function learnOverride(
  cache: OverrideCache,
  plans: Plans,
  head: string,
  value: string | undefined,
  invalid: (cause: unknown) => void,
): KnownOverride | undefined {
  if (value === undefined) {
    cache.delete(head);
    return undefined;
  }
  let known: KnownOverride;
  try {
    known = resolveOverride(value, plans);
  } catch (cause) {
    invalid(cause);
    known = { value, block: false, set: undefined, expiresAt: undefined };
  }
  cache.set(head, known);
  return known;
}

/** A blocked key's decision at `now`: denied until the block expires (Infinity: until cleared). */
export function blockedDecision(known: KnownOverride, degraded: Degraded, now: number): Decision {
  const left = known.expiresAt === undefined ? undefined : Math.max(1, known.expiresAt - now);
  const view = {
    rule: 'override.block',
    allowed: false,
    limit: 0,
    windowMs: left ?? 0,
    remaining: 0,
    resetMs: left ?? 0,
    retryAfterMs: left ?? Number.POSITIVE_INFINITY,
    blocked: true as const,
  };
  return { ...view, rules: [view], degraded, shadowDenied: [] };
}

/** A bounded LRU of the overrides this process has seen, by key head. */
export interface OverrideCache {
  get(head: string): KnownOverride | undefined;
  set(head: string, known: KnownOverride): void;
  delete(head: string): void;
  readonly size: number;
}

/** @param learned told of each override as it is taken in (the limiter's calendar-durability check). */
export function createOverrideCache(
  maxKeys: number,
  learned: (entry: KnownOverride) => void = () => undefined,
): OverrideCache {
  const known = new Map<string, KnownOverride>();
  return {
    get size() {
      return known.size;
    },
    get(head) {
      const entry = known.get(head);
      if (entry !== undefined) {
        known.delete(head);
        known.set(head, entry);
      }
      return entry;
    },
    set(head, entry) {
      learned(entry);
      known.delete(head);
      known.set(head, entry);
      if (known.size > maxKeys) {
        const oldest = known.keys().next();
        if (!oldest.done) known.delete(oldest.value);
      }
    },
    delete(head) {
      known.delete(head);
    },
  };
}
