/**
 * Circuit breaker for the store: after `failureThreshold` consecutive failures the store is not
 * called for `cooldownMs`; then one probe is let through. A success closes the circuit, a failure
 * opens it for another cool-down. This turns an outage into fast local answers instead of one
 * timed-out Redis call per request.
 */

export interface CircuitBreaker {
  /** Whether a call may go to the store now (false while open; true for one probe after the cool-down). */
  allow(now: number): boolean;
  /** Records a successful call; returns true when this closes an open circuit (recovery). */
  succeed(): boolean;
  /** Records a failed call; returns true when this opens the circuit. */
  fail(now: number): boolean;
  /** Milliseconds until the next probe may be sent (0 when closed). */
  retryInMs(now: number): number;
}

export function createCircuitBreaker(failureThreshold: number, cooldownMs: number): CircuitBreaker {
  let failures = 0;
  let openUntil = 0;
  let open = false;
  let probing = false;

  return {
    allow(now) {
      if (!open) return true;
      if (probing || now < openUntil) return false;
      probing = true;
      return true;
    },
    succeed() {
      failures = 0;
      probing = false;
      if (!open) return false;
      open = false;
      return true;
    },
    fail(now) {
      failures++;
      probing = false;
      if (open) {
        openUntil = now + cooldownMs;
        return false;
      }
      if (failures < failureThreshold) return false;
      open = true;
      openUntil = now + cooldownMs;
      return true;
    },
    retryInMs(now) {
      return open ? Math.max(0, openUntil - now) : 0;
    },
  };
}
