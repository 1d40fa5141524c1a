/** A store's health across its shards: one degraded, one recovered, whatever order shards answer in. */
import { describe, expect, it } from 'vitest';
import { createHealth, QUIET_MS } from '../../src/resilience/health.js';
import type { Shard } from '../../src/resilience/shards.js';

const shard = (): Shard => ({ breaker: undefined, answered: 0, failingAt: 0 });

function observed() {
  let now = 1_000;
  const events: string[] = [];
  const health = createHealth(
    {
      degraded: (reason) => events.push(`degraded:${reason}`),
      recovered: () => events.push('recovered'),
    },
    () => now,
  );
  return { health, events, advance: (ms: number) => (now += ms) };
}

describe('store health', () => {
  it('one shard failing while others answer: degraded once, recovered once it answers', () => {
    const { health, events } = observed();
    const [down, up] = [shard(), shard()];
    for (let i = 0; i < 5; i++) {
      health.failed(down, health.issue(), 'error', new Error('down'));
      health.answered(up, health.issue());
      health.cutOff(down);
    }
    expect(events).toEqual(['degraded:error']);
    health.answered(down, health.issue());
    expect(events).toEqual(['degraded:error', 'recovered']);
  });

  it('a failure of a call issued before the shard last answered is old news', () => {
    const { health, events } = observed();
    const slot = shard();
    const early = health.issue();
    health.answered(slot, health.issue());
    health.failed(slot, early, 'timeout', new Error('late'));
    expect(events).toEqual([]);
  });

  it('recovers when the last failing shard has been quiet for QUIET_MS', () => {
    const { health, events, advance } = observed();
    const [once, busy, up] = [shard(), shard(), shard()];
    health.failed(once, health.issue(), 'error', undefined);
    health.failed(busy, health.issue(), 'timeout', undefined);
    advance(QUIET_MS - 1);
    health.cutOff(busy);
    health.answered(up, health.issue());
    advance(1);
    // `once` is forgotten; `busy` was found failing again since, so it still counts.
    health.answered(up, health.issue());
    expect(events).toEqual(['degraded:error']);
    health.answered(busy, health.issue());
    expect(events).toEqual(['degraded:error', 'recovered']);
  });
});
