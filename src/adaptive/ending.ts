/**
 * How an HTTP exchange behind the adaptive limit ended, told to it: an overload answer from the
 * upstream (502, 503, 504) backs it off; an answer that was not the upstream's (408, 429: the
 * gateway's or the rate limit's own), or none at all (the client left), says nothing of the
 * upstream's latency; anything else is a latency to learn from.
 */
import type { Admission } from './adaptive-limit.js';

const NOT_THE_UPSTREAM = new Set([408, 429]);
const OVERLOADED = new Set([502, 503, 504]);

/**
 * @param status the response's status.
 * @param latencyMs the time to the response's head; undefined when no head was sent.
 */
export function endAdmission(admission: Admission, status: number, latencyMs: number | undefined): void {
  if (OVERLOADED.has(status)) admission.dropped();
  else if (NOT_THE_UPSTREAM.has(status) || latencyMs === undefined) admission.ignore();
  else admission.success(latencyMs);
}
