/** The resilience parts that need no server: circuit breaker, deny cache and deadline. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { answerLocally } from '../../src/base/local-answers.js';
import { createDenyCache } from '../../src/core/deny-cache.js';
import type { Decision } from '../../src/index.js';
import { createCircuitBreaker } from '../../src/resilience/breaker.js';
import { createDeadlines, TIMED_OUT } from '../../src/resilience/deadline.js';

/** Holds the event loop for `ms`: nothing else in this process runs meanwhile. */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/** The source of an echo server in a process of its own, so it answers while this one is blocked. */
const ECHO_SERVER = `
  const server = require('node:net').createServer((peer) => { peer.on('error', () => {}); peer.pipe(peer); });
  server.listen(0, '127.0.0.1', () => console.log(server.address().port));
  process.stdin.on('end', () => process.exit(0)).resume();
`;

/** A loopback echo server in another process and a client socket to it: a reply that is real I/O. */
async function echo(): Promise<{ socket: Socket; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', ECHO_SERVER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const [port] = await once(createInterface({ input: child.stdout }), 'line');
  const socket = createConnection(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  return {
    socket,
    close: async () => {
      socket.destroy();
      const exited = once(child, 'exit');
      child.stdin.end();
      await exited;
    },
  };
}

const denial = (retryAfterMs: number): Decision => {
  const rule = {
    rule: 'r',
    allowed: false,
    limit: 5,
    windowMs: 1000,
    remaining: 0,
    resetMs: retryAfterMs,
    retryAfterMs,
  };
  return { ...rule, rules: [rule], degraded: false, shadowDenied: [] };
};

describe('circuit breaker', () => {
  it('opens after the threshold, lets one probe through after the cool-down, closes on success', () => {
    const breaker = createCircuitBreaker(3, 500);
    expect(breaker.fail(0)).toBe(false);
    expect(breaker.fail(1)).toBe(false);
    expect(breaker.allow(2)).toBe(true);
    expect(breaker.fail(2)).toBe(true);
    expect(breaker.allow(3)).toBe(false);
    expect(breaker.retryInMs(102)).toBe(400);
    expect(breaker.allow(502)).toBe(true); // the probe
    expect(breaker.allow(502)).toBe(false); // only one at a time
    expect(breaker.fail(510)).toBe(false); // still open, for another cool-down
    expect(breaker.allow(1009)).toBe(false);
    expect(breaker.allow(1010)).toBe(true);
    expect(breaker.succeed()).toBe(true);
    expect(breaker.allow(1011)).toBe(true);
    expect(breaker.retryInMs(1011)).toBe(0);
  });

  it('a success resets the count of consecutive failures', () => {
    const breaker = createCircuitBreaker(2, 100);
    breaker.fail(0);
    breaker.succeed();
    expect(breaker.fail(1)).toBe(false);
    expect(breaker.fail(2)).toBe(true);
  });
});

describe('deny cache', () => {
  it('answers until the retry time, with waits shifted, only for costs at least as large', () => {
    const cache = createDenyCache(10);
    cache.remember('k', 2, denial(800), 1000);
    expect(cache.get('k', 2, 1300)).toMatchObject({ allowed: false, retryAfterMs: 500, resetMs: 500 });
    expect(cache.get('k', 3, 1300)?.retryAfterMs).toBe(500);
    expect(cache.get('k', 1, 1300)).toBeUndefined();
    expect(cache.get('k', 2, 1800)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('never caches a denial without a finite wait', () => {
    const cache = createDenyCache(10);
    cache.remember('k', 9, denial(Number.POSITIVE_INFINITY), 0);
    expect(cache.size).toBe(0);
  });

  it('stays within maxKeys under a flood of unique keys, dropping the least recently denied', () => {
    const cache = createDenyCache(1000);
    for (let i = 0; i < 50_000; i++) cache.remember(`key-${i}`, 1, denial(60_000), i);
    expect(cache.size).toBe(1000);
    expect(cache.get('key-49999', 1, 50_000)).toBeDefined();
    expect(cache.get('key-0', 1, 50_000)).toBeUndefined();
  });

  it('forget drops a key at once', () => {
    const cache = createDenyCache(10);
    cache.remember('k', 1, denial(1000), 0);
    cache.forget('k');
    expect(cache.get('k', 1, 1)).toBeUndefined();
  });
});

describe('deadline', () => {
  it('resolves TIMED_OUT when the work is late, and swallows its late rejection', async () => {
    let rejectLate: (error: Error) => void = () => {};
    const late = new Promise<number>((_, reject) => {
      rejectLate = reject;
    });
    expect(await createDeadlines(10).within(late)).toBe(TIMED_OUT);
    rejectLate(new Error('late')); // must not become an unhandled rejection
    const deadlines = createDeadlines(1000);
    expect(await deadlines.within(Promise.resolve(7))).toBe(7);
    await expect(deadlines.within(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  });

  it('one queue: each call times out on its own deadline, answered ones never do', async () => {
    const deadlines = createDeadlines(40);
    const never = new Promise<number>(() => {});
    const started = performance.now();
    const first = deadlines.within(never);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const answered = deadlines.within(Promise.resolve(1));
    const second = deadlines.within(never);
    expect(await answered).toBe(1);
    expect(await first).toBe(TIMED_OUT);
    const firstAt = performance.now() - started;
    expect(await second).toBe(TIMED_OUT);
    const secondAt = performance.now() - started;
    // The second was set ~20 ms later, so it cannot expire before ~60 ms.
    expect(firstAt).toBeGreaterThanOrEqual(39);
    expect(secondAt).toBeGreaterThanOrEqual(59);
  });

  it('regression: a reply that arrived while the event loop was blocked wins over the late timer', async () => {
    const { socket, close } = await echo();
    try {
      const deadlines = createDeadlines(50);
      const reply = once(socket, 'data').then(([data]) => String(data));
      const outcome = deadlines.within(reply);
      // Let the deadline's clock start, then send and hold the loop far past the deadline (long
      // enough for the echo process to answer on a loaded machine): the echo is in the socket
      // before the late timer is judged.
      await new Promise((resolve) => setImmediate(resolve));
      socket.write('pong');
      block(600);
      expect(await outcome).toBe('pong');
    } finally {
      await close();
    }
  });

  it('the clock starts when the loop reaches its check phase, not while the turn is still busy', async () => {
    const { socket, close } = await echo();
    try {
      // The deadline leaves the echo process room to answer on a loaded machine; the block is
      // twice it, so a clock started at within() would have expired.
      const deadlines = createDeadlines(300);
      const outcome = deadlines.within(once(socket, 'data').then(([data]) => String(data)));
      block(600);
      socket.write('late but sent');
      expect(await outcome).toBe('late but sent');
    } finally {
      await close();
    }
  });
});

describe('local answers', () => {
  it('a loop awaiting only local answers still lets timers and I/O run', async () => {
    let fired = false;
    setTimeout(() => {
      fired = true;
    }, 1);
    const started = performance.now();
    while (!fired && performance.now() - started < 5000) {
      await answerLocally(1);
    }
    expect(fired).toBe(true);
  });
});
