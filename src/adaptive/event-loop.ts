/**
 * The event loop's utilization over each window (Node's `performance.eventLoopUtilization`),
 * duck-typed so the adaptive limit still runs where it does not exist (it then reads 0).
 */

interface Utilization {
  readonly utilization: number;
}
type UtilizationReader = (since?: Utilization) => Utilization;

const reader = (globalThis.performance as { eventLoopUtilization?: UtilizationReader } | undefined)
  ?.eventLoopUtilization;

/** A reader of the utilization since its previous call (the first call: since the process started). */
export function eventLoopMeter(): () => number {
  if (reader === undefined) return () => 0;
  const read = reader.bind(globalThis.performance);
  let last = read();
  return () => {
    const since = read(last);
    last = read();
    return since.utilization;
  };
}
