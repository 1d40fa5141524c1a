/**
 * One limiter's recording into the meter's shared instruments (instruments.ts): attribute sets
 * bound once per rule and outcome, so a check does a map lookup and an increment, and allocates
 * nothing. Peeks are not counted: they decide nothing.
 */
import type { Decision } from '../core/decision.js';
import { instrumentsOf, type SlotSource, type Tally } from './instruments.js';
import type { MeterAttributes, MeterLike } from './meter.js';

/** The outcome of a decision, once each; in this order of precedence. */
const DEGRADED = 0;
const BLOCKED = 1;
const DENIED = 2;
const SHADOW_DENIED = 3;
const ALLOWED = 4;
const OUTCOMES = ['degraded', 'blocked', 'denied', 'shadow_denied', 'allowed'] as const;

/** Distinct `error.type` values per limiter before the rest are `_OTHER`. */
const MAX_ERROR_TYPES = 32;
/** An error class name as it can be shown: anything else is `_OTHER`. */
const ERROR_NAME = /^[A-Za-z][A-Za-z0-9_.]{0,63}$/;

export type StoreOperation = 'check' | 'peek' | 'settle' | 'release' | 'renew' | 'lease' | 'reset';

export interface LimiterMetrics {
  /** A check's decision; `cached` when the deny cache answered it. */
  decided(decision: Decision, cached: boolean): void;
  storeCall(operation: StoreOperation, seconds: number): void;
  storeError(cause: unknown): void;
  sliced(action: 'taken' | 'returned'): void;
  /** Stops reporting this limiter's slots (they read 0 from then on). */
  close(): void;
}

function outcomeOf(decision: Decision): number {
  if (decision.degraded !== false) return DEGRADED;
  if (!decision.allowed) return decision.blocked === true ? BLOCKED : DENIED;
  return decision.shadowDenied.length > 0 ? SHADOW_DENIED : ALLOWED;
}

export function createLimiterMetrics(
  meter: MeterLike,
  prefix: string,
  slots: SlotSource | undefined,
): LimiterMetrics {
  const instruments = instrumentsOf(meter);
  const byRule = new Map<string, Tally[]>();
  const denyCacheHits = instruments.tally('denyCacheHits', { 'floodgate.prefix': prefix });
  const taken = instruments.tally('leaseSlices', { 'floodgate.prefix': prefix, 'floodgate.action': 'taken' });
  const returned = instruments.tally('leaseSlices', {
    'floodgate.prefix': prefix,
    'floodgate.action': 'returned',
  });
  const operations = new Map<string, MeterAttributes>();
  const errorTypes = new Map<string, MeterAttributes>();
  const removeSlots = slots === undefined ? undefined : instruments.addSlots(prefix, slots);

  function talliesOf(rule: string): Tally[] {
    let tallies = byRule.get(rule);
    if (tallies === undefined) {
      tallies = OUTCOMES.map((outcome) =>
        instruments.tally('decisions', {
          'floodgate.prefix': prefix,
          'floodgate.rule': rule,
          'floodgate.outcome': outcome,
        }),
      );
      byRule.set(rule, tallies);
    }
    return tallies;
  }

  /** Bound once per value: the attribute objects of a bounded set of values. */
  function bound(cache: Map<string, MeterAttributes>, name: string, value: string): MeterAttributes {
    let attributes = cache.get(value);
    if (attributes === undefined) {
      attributes = Object.freeze({ 'floodgate.prefix': prefix, [name]: value });
      cache.set(value, attributes);
    }
    return attributes;
  }

  return {
    decided(decision, cached) {
      (talliesOf(decision.rule)[outcomeOf(decision)] as Tally).pending++;
      if (cached) denyCacheHits.pending++;
    },
    storeCall(operation, seconds) {
      instruments.storeDuration.record(seconds, bound(operations, 'floodgate.operation', operation));
    },
    storeError(cause) {
      const name = cause instanceof Error && ERROR_NAME.test(cause.name) ? cause.name : '_OTHER';
      const type = errorTypes.has(name) || errorTypes.size < MAX_ERROR_TYPES ? name : '_OTHER';
      instruments.storeErrors.add(1, bound(errorTypes, 'error.type', type));
    },
    sliced(action) {
      (action === 'taken' ? taken : returned).pending++;
    },
    close() {
      removeSlots?.();
    },
  };
}
