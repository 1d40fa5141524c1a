/**
 * The scheduler in one process on the memory store: priority then fair tenant order, FIFO within
 * a tenant, slots given back whatever the job does, waits that end early (maxWait, signal,
 * highWater, close) taking nothing, settle, pauses, and budgets learned from responses.
 */
import { describe, expect, it } from 'vitest';
import {
  createLimiter,
  createScheduler,
  LimiterClosedError,
  memoryStore,
  QueueFullError,
  type RuleOptions,
  type Scheduler,
  WaitTimeoutError,
} from '../../src/index.js';

const oneAtATime: RuleOptions = { name: 'one', algorithm: 'concurrency', limit: 1, lease: '1m' };

/** A promise with its resolver, to hold a job running until the test lets it go. */
function deferred(): { promise: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

/** Waits until the scheduler has `waiting` jobs queued (the queue answers within a few turns). */
async function untilWaiting(scheduler: Scheduler, waiting: number): Promise<void> {
  while (scheduler.counts().waiting !== waiting) await new Promise((resolve) => setImmediate(resolve));
}

/** A scheduler whose one slot is held by a job until `release()`: every later job queues. */
async function heldScheduler(options: Record<string, unknown> = {}) {
  const scheduler = createScheduler({ rules: oneAtATime, ...options });
  const blocker = deferred();
  const first = scheduler.schedule(() => blocker.promise);
  while (scheduler.counts().running === 0) await new Promise((resolve) => setImmediate(resolve));
  return { scheduler, release: blocker.release, first };
}

describe('order', () => {
  it('runs lower priorities first, FIFO within a priority', async () => {
    const { scheduler, release } = await heldScheduler();
    const order: string[] = [];
    const jobs = [
      ['a5', 5],
      ['b9', 9],
      ['c0', 0],
      ['d5', 5],
      ['e0', 0],
    ].map(([name, priority]) =>
      scheduler.schedule(() => order.push(name as string), { priority: priority as number }),
    );
    await untilWaiting(scheduler, 5);
    release();
    await Promise.all(jobs);
    expect(order).toEqual(['c0', 'e0', 'a5', 'd5', 'b9']);
    await scheduler.close();
  });

  it("a tenant with many jobs queued delays another tenant's one job by at most one turn", async () => {
    const { scheduler, release } = await heldScheduler();
    const order: string[] = [];
    const jobs: Promise<unknown>[] = [];
    for (let i = 1; i <= 50; i++) jobs.push(scheduler.schedule(() => order.push(`a${i}`), { tenant: 'a' }));
    jobs.push(scheduler.schedule(() => order.push('b1'), { tenant: 'b' }));
    await untilWaiting(scheduler, 51);
    release();
    await Promise.all(jobs);
    expect(order.indexOf('b1')).toBe(1);
    expect(order.filter((name) => name.startsWith('a'))).toEqual(
      Array.from({ length: 50 }, (_, i) => `a${i + 1}`),
    );
    await scheduler.close();
  });

  it('shares turns between tenants weighted by cost', async () => {
    const scheduler = createScheduler({ rules: { algorithm: 'concurrency', limit: 4, lease: '1m' } });
    const blocker = deferred();
    const first = scheduler.schedule(() => blocker.promise, { cost: 4 });
    while (scheduler.counts().running === 0) await new Promise((resolve) => setImmediate(resolve));
    const order: string[] = [];
    const jobs: Promise<unknown>[] = [];
    for (let i = 1; i <= 4; i++)
      jobs.push(scheduler.schedule(() => order.push(`big${i}`), { tenant: 'big', cost: 4 }));
    for (let i = 1; i <= 8; i++)
      jobs.push(scheduler.schedule(() => order.push(`small${i}`), { tenant: 'small', cost: 1 }));
    await untilWaiting(scheduler, 12);
    blocker.release();
    await Promise.all([first, ...jobs]);
    // big's jobs start at virtual times 0, 4, 8, 12; small's at 0, 1, 2, ... (ties: queued first).
    expect(order.slice(0, 7)).toEqual(['big1', 'small1', 'small2', 'small3', 'small4', 'big2', 'small5']);
    await scheduler.close();
  });
});

describe('running and settling', () => {
  it('gives the slot back when a job throws, and rejects with its error', async () => {
    const scheduler = createScheduler({ rules: oneAtATime });
    const failing = scheduler.schedule(() => {
      throw new Error('upstream down');
    });
    const next = scheduler.schedule((grant) => grant.decision.allowed);
    await expect(failing).rejects.toThrow('upstream down');
    await expect(next).resolves.toBe(true);
    expect(scheduler.counts()).toEqual({ waiting: 0, running: 0 });
    await scheduler.close();
  });

  it('waits exactly for a rate rule, and grant.settle charges the cost really used', async () => {
    const store = memoryStore();
    const rules: RuleOptions = { name: 'tpm', algorithm: 'fixed-window', limit: 100, window: '1m' };
    const scheduler = createScheduler({ store, rules, prefix: 'settle' });
    const observer = createLimiter({ store, rules, prefix: 'settle' });
    const grantKey = await scheduler.schedule(
      async (grant) => {
        await grant.settle(30);
        return [grant.key, grant.tenant, grant.decision.remaining];
      },
      { key: 'llm', cost: 60, tenant: 't1' },
    );
    expect(grantKey).toEqual(['llm', 't1', 40]);
    // 30 used: a peek (of cost 1) answers what would remain after it.
    expect((await observer.peek('llm')).remaining).toBe(69);
    // 70 left: a job of 80 can never run before the window ends; a maxWait ends its wait.
    await expect(
      scheduler.schedule(() => 'late', { key: 'llm', cost: 80, maxWait: 50 }),
    ).rejects.toBeInstanceOf(WaitTimeoutError);
    expect((await observer.peek('llm')).remaining).toBe(69);
    await Promise.all([scheduler.close(), observer.close()]);
  });

  it('rejects a job whose cost the rules can never allow', async () => {
    const scheduler = createScheduler({ rules: { algorithm: 'fixed-window', limit: 10, window: '1s' } });
    await expect(scheduler.schedule(() => 1, { cost: 11 })).rejects.toThrow(
      'cost: 11 is more than the rules of key "default" can ever allow',
    );
    await scheduler.close();
  });

  it('wrap calls the function with the caller arguments', async () => {
    const scheduler = createScheduler({ rules: oneAtATime });
    const add = scheduler.wrap((a: number, b: number) => a + b, { key: 'math' });
    await expect(Promise.all([add(1, 2), add(3, 4)])).resolves.toEqual([3, 7]);
    await scheduler.close();
  });
});

describe('waits that end early take nothing', () => {
  it('signal: rejects with its reason, at once when already aborted', async () => {
    const { scheduler, release } = await heldScheduler();
    const controller = new AbortController();
    const waiting = scheduler.schedule(() => 'ran', { signal: controller.signal });
    await untilWaiting(scheduler, 1);
    controller.abort(new Error('caller left'));
    await expect(waiting).rejects.toThrow('caller left');
    await expect(scheduler.schedule(() => 'ran', { signal: controller.signal })).rejects.toThrow(
      'caller left',
    );
    expect(scheduler.counts()).toEqual({ waiting: 0, running: 1 });
    release();
    await expect(scheduler.schedule(() => 'next')).resolves.toBe('next');
    await scheduler.close();
  });

  it('signal: a job aborted while the check of a key nothing waits on is on its way takes nothing', async () => {
    const scheduler = createScheduler({ rules: { algorithm: 'fixed-window', limit: 1, window: '1m' } });
    const controller = new AbortController();
    let ran = false;
    const aborted = scheduler.schedule(() => (ran = true), { key: 'idle', signal: controller.signal });
    controller.abort(new Error('caller left'));
    await expect(aborted).rejects.toThrow('caller left');
    expect(ran).toBe(false);
    // The only request of the window is still there.
    await expect(scheduler.schedule(() => 'next', { key: 'idle', maxWait: 100 })).resolves.toBe('next');
    await scheduler.close();
  });

  it('highWater: the job past it rejects at once with QueueFullError', async () => {
    const { scheduler, release } = await heldScheduler({ highWater: 2 });
    const queued = [scheduler.schedule(() => 1), scheduler.schedule(() => 2)];
    await expect(scheduler.schedule(() => 3)).rejects.toBeInstanceOf(QueueFullError);
    release();
    await expect(Promise.all(queued)).resolves.toEqual([1, 2]);
    await scheduler.close();
  });

  it('close: waiting jobs reject with LimiterClosedError, running ones finish', async () => {
    const { scheduler, release, first } = await heldScheduler();
    const waiting = scheduler.schedule(() => 'never');
    await untilWaiting(scheduler, 1);
    const closed = scheduler.close();
    await expect(waiting).rejects.toBeInstanceOf(LimiterClosedError);
    await expect(scheduler.schedule(() => 1)).rejects.toBeInstanceOf(LimiterClosedError);
    release();
    await closed;
    await expect(first).resolves.toBeUndefined();
  });
});

describe('pauses and learned budgets', () => {
  it('pause holds the key and only extends; the paused event says until when', async () => {
    const scheduler = createScheduler({ rules: { algorithm: 'fixed-window', limit: 100, window: '1m' } });
    const events: unknown[] = [];
    scheduler.on('paused', (info) => events.push(info));
    const before = Date.now();
    await scheduler.pause('api', 300);
    await scheduler.pause('api', 10);
    expect(events).toHaveLength(2);
    const [first, second] = events as { key: string; until: number; source: string }[];
    expect(first?.key).toBe('api');
    expect(first?.source).toBe('pause');
    expect(second?.until).toBe(first?.until);
    expect(first?.until).toBeGreaterThanOrEqual(before + 300);
    await expect(scheduler.schedule(() => 'late', { key: 'api', maxWait: 100 })).rejects.toBeInstanceOf(
      WaitTimeoutError,
    );
    await expect(scheduler.schedule(() => Date.now(), { key: 'api' })).resolves.toBeGreaterThanOrEqual(
      first?.until as number,
    );
    await scheduler.close();
  });

  it('a 429 with Retry-After pauses the key (source response)', async () => {
    const scheduler = createScheduler({ rules: { algorithm: 'fixed-window', limit: 100, window: '1m' } });
    const events: { source: string }[] = [];
    scheduler.on('paused', (info) => events.push(info));
    const response = await scheduler.schedule(
      () => new Response('slow down', { status: 429, headers: { 'retry-after': '2' } }),
      { key: 'api' },
    );
    expect(response.status).toBe(429);
    await expect(scheduler.schedule(() => 'late', { key: 'api', maxWait: 200 })).rejects.toBeInstanceOf(
      WaitTimeoutError,
    );
    expect(events.map((event) => event.source)).toEqual(['response']);
    await scheduler.close();
  });

  it('a budget learned from headers lowers what the rules allow, counting jobs granted since', async () => {
    const scheduler = createScheduler({
      rules: { algorithm: 'fixed-window', limit: 100, window: '1m' },
      headers: 'openai',
    });
    const reply = (remaining: number) =>
      new Response('ok', {
        headers: { 'x-ratelimit-remaining-requests': String(remaining), 'x-ratelimit-reset-requests': '1m' },
      });
    // The upstream says 2 left after the first job; the next two are granted, the third waits.
    await scheduler.schedule(() => reply(2), { key: 'up' });
    await expect(scheduler.schedule(() => 'second', { key: 'up' })).resolves.toBe('second');
    await expect(scheduler.schedule(() => 'third', { key: 'up' })).resolves.toBe('third');
    await expect(scheduler.schedule(() => 'fourth', { key: 'up', maxWait: 100 })).rejects.toBeInstanceOf(
      WaitTimeoutError,
    );
    await scheduler.close();
  });

  it("a 403 pauses only when the dialect reads it as a rate limit (GitHub's, not a permission error)", async () => {
    const events: { key: string; source: string }[] = [];
    const forbid = (headers: Record<string, string>) => () => new Response('no', { status: 403, headers });
    const github = createScheduler({
      rules: { algorithm: 'fixed-window', limit: 100, window: '1m' },
      headers: 'github',
    });
    github.on('paused', (info) => events.push(info));
    const reset = String(Math.ceil(Date.now() / 1000) + 60);
    await github.schedule(forbid({ 'x-ratelimit-remaining': '4999', 'x-ratelimit-reset': reset }), {
      key: 'perm',
    });
    await github.schedule(forbid({ 'retry-after': '30' }), { key: 'secondary' });
    await github.schedule(forbid({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset }), {
      key: 'primary',
    });
    // The same 403 with a Retry-After from an API whose dialect has no such rule pauses nothing.
    const openai = createScheduler({
      rules: { algorithm: 'fixed-window', limit: 100, window: '1m' },
      headers: 'openai',
    });
    openai.on('paused', (info) => events.push(info));
    await openai.schedule(forbid({ 'retry-after': '30' }), { key: 'region' });
    await expect.poll(() => events.length).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(events.map((event) => [event.key, event.source])).toEqual([
      ['secondary', 'response'],
      ['primary', 'response'],
    ]);
    await expect(github.schedule(() => 'late', { key: 'secondary', maxWait: 50 })).rejects.toBeInstanceOf(
      WaitTimeoutError,
    );
    await expect(github.schedule(() => 'free', { key: 'perm' })).resolves.toBe('free');
    await Promise.all([github.close(), openai.close()]);
  });

  it("fetch retries GitHub's rate-limit 403 after its pause", async () => {
    const { createServer } = await import('node:http');
    let calls = 0;
    const server = createServer((_request, response) => {
      calls++;
      if (calls === 1) response.writeHead(403, { 'retry-after-ms': '100' }).end('secondary rate limit');
      else response.writeHead(200).end('fine');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const scheduler = createScheduler({
      rules: { algorithm: 'fixed-window', limit: 100, window: '1m' },
      headers: 'github',
    });
    const response = await scheduler.fetch(`http://127.0.0.1:${port}/`, undefined, { key: 'gh' });
    expect([response.status, await response.text(), calls]).toEqual([200, 'fine', 2]);
    await scheduler.close();
    await new Promise((resolve) => server.close(resolve));
  });

  it('fetch retries a 429 after its pause, at most `retries` times', async () => {
    const { createServer } = await import('node:http');
    let calls = 0;
    const server = createServer((_request, response) => {
      calls++;
      if (calls === 1) response.writeHead(429, { 'retry-after-ms': '100' }).end('wait');
      else response.writeHead(200).end('fine');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const scheduler = createScheduler({ rules: { algorithm: 'fixed-window', limit: 100, window: '1m' } });
    const response = await scheduler.fetch(`http://127.0.0.1:${port}/`, undefined, { key: 'up' });
    expect([response.status, await response.text(), calls]).toEqual([200, 'fine', 2]);
    calls = 0;
    const noRetry = await scheduler.fetch(`http://127.0.0.1:${port}/`, undefined, { key: 'up', retries: 0 });
    expect([noRetry.status, calls]).toEqual([429, 1]);
    await noRetry.text();
    await scheduler.close();
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('validation', () => {
  const rules: RuleOptions = { algorithm: 'fixed-window', limit: 10, window: '1s' };
  it.each([
    [{ highWater: 0 }, 'highWater: 0 must be an integer from 1 to 10000000'],
    [{ headers: 'yaml' }, 'headers: "yaml" must be'],
    [{ concurrency: 2 }, "createScheduler: unknown option 'concurrency'"],
  ])('createScheduler(%o) throws naming the option', (extra, message) => {
    expect(() => createScheduler({ rules, ...extra } as never)).toThrow(message);
  });

  it.each([
    [{ priority: 10 }, 'priority: 10 must be an integer from 0 to 9'],
    [{ priority: 1.5 }, 'priority: 1.5 must be an integer from 0 to 9'],
    [{ cost: 0 }, 'cost: 0 must be an integer from 1 to'],
    [{ maxWait: 'soon' }, 'maxWait: "soon" is not a duration'],
    [{ key: 7 }, 'key: expected a string, got 7'],
    [{ tenant: {} }, 'tenant: expected a string'],
    [{ signal: 'stop' }, 'signal: expected an AbortSignal, got "stop"'],
    [{ retries: 1 }, "schedule options: unknown option 'retries'"],
  ])('schedule(fn, %o) rejects naming the option', async (options, message) => {
    const scheduler = createScheduler({ rules });
    await expect(scheduler.schedule(() => 1, options as never)).rejects.toThrow(message);
    await scheduler.close();
  });
});
