/**
 * A minimal event emitter (on, off, emit) for the limiter's events, in Web-standard code so the
 * limiter runs where `node:events` does not exist. Listeners run synchronously in the order they
 * were added; one added twice runs twice, as with Node's EventEmitter.
 */

type EventMap<Events> = { [E in keyof Events]: unknown[] };

export interface Emitter<Events extends EventMap<Events>> {
  on<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): void;
  off<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): void;
  emit<E extends keyof Events>(event: E, ...args: Events[E]): void;
}

/** Creates an emitter for the events described by `Events`. */
export function createEmitter<Events extends EventMap<Events>>(): Emitter<Events> {
  const listeners = new Map<keyof Events, ((...args: never) => void)[]>();
  return {
    on(event, listener) {
      listeners.set(event, [...(listeners.get(event) ?? []), listener]);
    },
    off(event, listener) {
      const list = listeners.get(event);
      const index = list?.lastIndexOf(listener) ?? -1;
      // A new array, so a listener removed during an emit does not shift the ones still to run.
      if (list !== undefined && index >= 0) listeners.set(event, list.toSpliced(index, 1));
    },
    emit(event, ...args) {
      for (const listener of listeners.get(event) ?? [])
        (listener as (...a: Events[typeof event]) => void)(...args);
    },
  };
}
