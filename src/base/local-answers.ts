/**
 * Answers made in this process without I/O (a cached denial, an open circuit) resolve as
 * microtasks. A loop that awaits nothing else (`while (…) await limiter.check(key)`) would then
 * never let the event loop poll its sockets or run its timers: Redis replies that arrived in time
 * would go unread, batches unsent, deadlines unjudged. So every RUN-th such answer in a row waits
 * for the event loop's next check phase, which comes after an I/O poll. Process-wide, as the event
 * loop is.
 */
import { nextTurn } from '../turns.js';

/** Local answers between two turns of the event loop: rare enough not to show in a flood's cost. */
const RUN = 64;

let answered = 0;
let parked: (() => void)[] = [];

function release(): void {
  answered = 0;
  const waiting = parked;
  parked = [];
  for (const resume of waiting) resume();
}

/** `value`, at once, or on the event loop's next check phase when RUN local answers came first. */
export function answerLocally<T>(value: T): T | Promise<T> {
  if (++answered < RUN) return value;
  return new Promise((resolve) => {
    if (parked.push(() => resolve(value)) === 1) nextTurn(release);
  });
}
