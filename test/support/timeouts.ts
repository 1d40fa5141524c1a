/**
 * The store deadline for tests that count exactly over a real Redis but are not about deadlines.
 * The default (100 ms) is right for a gateway; on a shared 2-core CI machine running several
 * Redis servers, one slow call could otherwise be answered by the fail-open policy and blur an
 * exact count. Deadline behaviour itself is tested in test/resilience with the default.
 */
export const SLOW_MACHINE_TIMEOUT = '10s';
