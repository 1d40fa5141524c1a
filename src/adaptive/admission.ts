/**
 * How much of the limit each criticality may fill: critical the whole limit, standard all but
 * the critical reserve, sheddable all but both reserves. Under pressure the in-flight count
 * reaches the sheddable ceiling first, so sheddable requests are refused before any other.
 */
import type { Criticality } from './options.js';

export interface Reserves {
  readonly criticalReserve: number;
  readonly standardReserve: number;
}

/** The most requests in flight at which one more of `criticality` is still let through. */
export function ceilingOf(limit: number, criticality: Criticality, reserves: Reserves): number {
  const whole = Math.floor(limit);
  if (criticality === 'critical') return whole;
  const reserved =
    criticality === 'standard'
      ? reserves.criticalReserve
      : reserves.criticalReserve + reserves.standardReserve;
  // At least one slot for every criticality, so a small limit never starves a class outright.
  return Math.max(1, Math.floor(whole * (1 - reserved)));
}
