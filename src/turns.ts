/**
 * Event-loop turns on every runtime: Node's `setImmediate` (after the next I/O poll) where it
 * exists, a zero-delay timer elsewhere (Workers, browsers); and `unref` for timers that must not
 * keep a Node process alive, a no-op where timers are plain numbers.
 */

const immediate: (callback: () => void) => void =
  typeof setImmediate === 'function' ? setImmediate : (callback) => setTimeout(callback, 0);

/** Runs `callback` on a later turn of the event loop, after pending I/O has been polled. */
export function nextTurn(callback: () => void): void {
  immediate(callback);
}

/** Lets `timer` not hold the process open (Node); nothing on runtimes without `unref`. */
export function unref(timer: ReturnType<typeof setTimeout>): void {
  (timer as { unref?: () => void }).unref?.();
}
