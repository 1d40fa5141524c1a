/**
 * A store with the duration of each call it makes on the limiter's behalf reported (checks,
 * peeks, settles, slot releases and renewals, quota slices, resets), whichever path the call
 * takes; overrides and everything else pass straight through. Failed calls are timed too: a
 * slow failure is what an operator looks for. A late answer (past the limiter's deadline) is
 * timed when it arrives, so the histogram shows how slow the store really was.
 */
import type { Store } from '../stores/types.js';
import type { StoreOperation } from './metrics.js';

export type ObserveStoreCall = (operation: StoreOperation, seconds: number) => void;

export function timedStore(store: Store, observe: ObserveStoreCall): Store {
  const since = (operation: StoreOperation, started: number) =>
    observe(operation, (performance.now() - started) / 1000);
  function timed<A extends unknown[], R>(
    operation: StoreOperation | ((...args: A) => StoreOperation),
    call: (...args: A) => Promise<R>,
  ): (...args: A) => Promise<R> {
    return (...args) => {
      const started = performance.now();
      const name = typeof operation === 'string' ? operation : operation(...args);
      return call(...args).finally(() => since(name, started));
    };
  }
  const lease = store.lease?.bind(store);
  const slots = store.slots?.bind(store);
  const evaluateWith = store.evaluateWith?.bind(store);
  return {
    kind: store.kind,
    ...(store.local !== undefined ? { local: store.local } : {}),
    ...(store.clock !== undefined ? { clock: store.clock } : {}),
    ...(store.shardOf !== undefined ? { shardOf: store.shardOf.bind(store) } : {}),
    ...(store.inspect !== undefined ? { inspect: store.inspect.bind(store) } : {}),
    // Left out, a gateway's limiters could not merge their heavy hitters into the fleet's.
    ...(store.sketches !== undefined ? { sketches: store.sketches } : {}),
    ...(store.reservoirs !== undefined ? { reservoirs: store.reservoirs } : {}),
    evaluate(head, rules, cost, consume, overrideSeen) {
      const started = performance.now();
      const operation = consume ? 'check' : 'peek';
      const reply = store.evaluate(head, rules, cost, consume, overrideSeen);
      // The memory store answers synchronously: keep it so (no promise where there was none).
      if (!(reply instanceof Promise)) {
        since(operation, started);
        return reply;
      }
      return reply.finally(() => since(operation, started));
    },
    // Left out, every check would take the store's slower promise path.
    ...(evaluateWith !== undefined
      ? {
          evaluateWith(head, rules, cost, consume, overrideSeen, receiver) {
            const started = performance.now();
            const operation = consume ? 'check' : 'peek';
            evaluateWith(head, rules, cost, consume, overrideSeen, {
              answered(reply) {
                since(operation, started);
                receiver.answered(reply);
              },
              failed(error) {
                since(operation, started);
                receiver.failed(error);
              },
            });
          },
        }
      : {}),
    reset: timed('reset', (head, rules) => store.reset(head, rules)),
    settle: timed('settle', (...args: Parameters<Store['settle']>) => store.settle(...args)),
    // Left out, the limiter could not lease: rules with quotaLease would check every request.
    ...(lease !== undefined ? { lease: timed('lease', lease) } : {}),
    ...(slots !== undefined ? { slots: timed((...args: Parameters<typeof slots>) => args[4], slots) } : {}),
    setOverride: (...args) => store.setOverride(...args),
    clearOverride: (...args) => store.clearOverride(...args),
    listOverrides: (...args) => store.listOverrides(...args),
  };
}
