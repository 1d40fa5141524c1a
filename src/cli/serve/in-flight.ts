/** Calls under way on a generation (its HTTP requests, its Envoy RLS calls), and a wait for none. */
export interface InFlight {
  enter(): void;
  leave(): void;
  /** Resolves true once no call is under way; false after `timeoutMs` if given. */
  idle(timeoutMs?: number): Promise<boolean>;
}

export function createInFlight(): InFlight {
  let count = 0;
  let waiters: (() => void)[] = [];
  return {
    enter() {
      count++;
    },
    leave() {
      count--;
      if (count > 0) return;
      for (const wake of waiters) wake();
      waiters = [];
    },
    idle(timeoutMs) {
      if (count === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = timeoutMs === undefined ? undefined : setTimeout(() => resolve(false), timeoutMs);
        waiters.push(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
  };
}
