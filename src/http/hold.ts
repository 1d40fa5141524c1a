/**
 * Holding a request's concurrency slots for as long as its response is in flight: the lease is
 * renewed every half lease (so a response that outlives the lease keeps its slot), and the slots
 * are released once, when the adapter reports the response finished, aborted or failed.
 */
import type { Decision } from '../core/decision.js';
import type { Limiter } from '../limiter.js';

/** Ends a request's hold on its slots; calling it again does nothing. */
export type Unhold = () => void;

const ignore = (): undefined => undefined;

/**
 * `hold(decision)` for a limiter; undefined (nothing to hold, nothing to listen for) unless the
 * limiter has concurrency rules and the decision was allowed.
 */
export function slotHolder(limiter: Limiter): (decision: Decision) => Unhold | undefined {
  const leases = limiter.rules
    .filter((rule) => rule.algorithm === 'concurrency')
    .map((rule) => rule.windowMs);
  if (leases.length === 0) return () => undefined;
  // Renewed at half the shortest lease: a renewal that is late by less than that still lands in time.
  const renewEveryMs = Math.max(1, Math.floor(Math.min(...leases) / 2));
  return function hold(decision) {
    if (!decision.allowed) return undefined;
    const timer = setInterval(() => limiter.renew(decision).catch(ignore), renewEveryMs);
    // A response in flight keeps the process alive by its socket, not by this timer (Node; Deno
    // and Workers return a number).
    (timer as { unref?: () => void }).unref?.();
    let held = true;
    return function unhold() {
      if (!held) return;
      held = false;
      clearInterval(timer);
      // Rejects only once the limiter is closed, which released the slots itself.
      limiter.release(decision).catch(ignore);
    };
  };
}
