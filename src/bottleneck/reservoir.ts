/**
 * The reservoir: a count of weight that jobs take as they start, set by `reservoir`, refreshed to
 * `reservoirRefreshAmount` every `reservoirRefreshInterval` and raised by
 * `reservoirIncreaseAmount` (up to `reservoirIncreaseMaximum`) every `reservoirIncreaseInterval`.
 * It gates the head of the scheduler's queue (its `admit` hook); each change that may let the
 * head go calls `opened`. This one is held in the process (a limiter's own memory store); on a
 * shared store it is the store's (shared-reservoir.ts).
 */
import { unref } from '../turns.js';
import type { LimitSettings } from './settings.js';

export interface Reservoir {
  /** null: no reservoir. */
  current(): Promise<number | null>;
  /** Would a job of `weight` fit now? */
  fits(weight: number): Promise<boolean>;
  /** The head's gate: may a job of `weight` be checked now (a shared reservoir takes it here)? */
  admit(weight: number): boolean | Promise<boolean>;
  /** An admitted job did not start: what `admit` took goes back. */
  unadmit(weight: number): void;
  /** A job of `weight` started: answers what is left. */
  take(weight: number): number | null;
  increment(amount: number): Promise<number | null>;
  /** New settings: a `reservoir` given sets it, and the intervals restart. */
  configure(limits: LimitSettings, given: Record<string, unknown>): Promise<void>;
  /** While jobs wait, the timers keep the process alive (a refresh is what they wait for). */
  keepAlive(waiting: boolean): void;
  stop(): void;
}

export function createReservoir(limits: LimitSettings, opened: () => void): Reservoir {
  let level = limits.reservoir;
  let settings = limits;
  let timers: ReturnType<typeof setInterval>[] = [];
  let alive = false;

  function restart(): void {
    stop();
    const { reservoirRefreshInterval, reservoirRefreshAmount } = settings;
    if (reservoirRefreshInterval != null && reservoirRefreshAmount != null) {
      timers.push(
        setInterval(() => {
          level = reservoirRefreshAmount;
          opened();
        }, reservoirRefreshInterval),
      );
    }
    const { reservoirIncreaseInterval, reservoirIncreaseAmount, reservoirIncreaseMaximum } = settings;
    if (reservoirIncreaseInterval != null && reservoirIncreaseAmount != null) {
      timers.push(
        setInterval(() => {
          const now = level ?? 0;
          const raise =
            reservoirIncreaseMaximum == null
              ? reservoirIncreaseAmount
              : Math.min(reservoirIncreaseAmount, reservoirIncreaseMaximum - now);
          if (raise > 0) {
            level = now + raise;
            opened();
          }
        }, reservoirIncreaseInterval),
      );
    }
    keepAlive(alive);
  }

  function keepAlive(waiting: boolean): void {
    alive = waiting;
    // Like Bottleneck's heartbeat, the refresh alone does not keep a process alive.
    for (const timer of timers) (timer as { ref?: () => void }).ref?.();
    if (!waiting) for (const timer of timers) unref(timer);
  }

  function stop(): void {
    for (const timer of timers) clearInterval(timer);
    timers = [];
  }

  const fits = (weight: number) => level === null || weight <= level;
  restart();
  return {
    current: async () => level,
    fits: async (weight) => fits(weight),
    admit: fits,
    // The local reservoir is taken from only when a job starts.
    unadmit: () => undefined,
    take(weight) {
      if (level !== null) level -= weight;
      return level;
    },
    async increment(amount) {
      level = (level ?? 0) + amount;
      opened();
      return level;
    },
    async configure(next, given) {
      settings = next;
      if ('reservoir' in given) level = next.reservoir;
      restart();
      opened();
    },
    keepAlive,
    stop,
  };
}
