/**
 * Learning from an upstream's response: a pause its dialect reads (a 429 or 503 with a retry
 * time, Anthropic's 529, GitHub's rate-limit 403) pauses the key for every process; the budgets its headers report are held beside the rules until the upstream's reset,
 * counted from the grant of the job that saw them (so a late response hands back nothing spent).
 */
import { describe } from '../describe.js';
import type { GrantMark, ObservedBudget } from '../stores/queue-types.js';
import type { BudgetReader, ResponseLike } from './upstream-headers.js';

export interface ObserverHooks {
  readonly reader: BudgetReader;
  /** Whether budgets are held (the `headers` option is not `false`). */
  readonly budgets: boolean;
  pause(key: string, ms: number, source: 'response'): Promise<void>;
  learn(key: string, budgets: readonly ObservedBudget[]): Promise<void>;
}

export interface Observer {
  /** Whether it paused the key. Throws only for what is not a response, or what a user's reader throws. */
  observe(key: string, response: ResponseLike, mark: GrantMark | Promise<GrantMark>): boolean;
  /** `observe` for a response a job returned: nothing it meets fails the job. */
  observeQuietly(key: string, response: ResponseLike, mark: GrantMark | Promise<GrantMark>): boolean;
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

export function createObserver(hooks: ObserverHooks): Observer {
  function observe(key: string, response: ResponseLike, mark: GrantMark | Promise<GrantMark>): boolean {
    if (
      typeof response !== 'object' ||
      response === null ||
      typeof response.status !== 'number' ||
      typeof response.headers !== 'object'
    ) {
      throw new TypeError(
        `observe: expected a response with a status and headers, got ${describe(response)}`,
      );
    }
    const observedAt = Date.now();
    const reading = hooks.reader(response, observedAt);
    if (reading === undefined) return false;
    const { retryAfterMs } = reading;
    // The dialect reads a pause only from its rate-limit answers: not from GitHub's permission 403s.
    const paused = isCount(retryAfterMs) && retryAfterMs > 0;
    if (paused) hooks.pause(key, Math.ceil(retryAfterMs), 'response').catch(() => undefined);
    if (!hooks.budgets) return paused;
    const held = Object.entries(reading.budgets).filter(
      ([, budget]) => isCount(budget.remaining) && isCount(budget.resetMs) && budget.resetMs > 0,
    );
    if (held.length === 0) return paused;
    Promise.resolve(mark)
      .then((granted) =>
        hooks.learn(
          key,
          held.map(([name, budget]) => ({
            name,
            remaining: Math.max(0, Math.floor(budget.remaining as number)),
            resetMs: Math.ceil(budget.resetMs as number),
            observedAt,
            mark: granted,
          })),
        ),
      )
      // A budget not held costs at most an upstream 429, which pauses the key.
      .catch(() => undefined);
    return paused;
  }
  return {
    observe,
    observeQuietly(key, response, mark) {
      try {
        return observe(key, response, mark);
      } catch {
        // The job's own result stands; a reader that throws only loses what it would have taught.
        return false;
      }
    },
  };
}
