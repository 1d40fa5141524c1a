/**
 * floodgate/bottleneck in one process (datastore 'local'): Bottleneck 2's public behaviour on
 * the scheduler — limits, order, strategies, reservoir, expiration, retries, events, stop.
 */
import { describe, expect, it } from 'vitest';
import Bottleneck, { BottleneckError } from '../../src/bottleneck/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `limiter` has emitted `name` `count` times from now (no guessing at timings). */
function events(limiter: Bottleneck, name: string, count = 1): Promise<void> {
  let seen = 0;
  return new Promise((resolve) => {
    limiter.on(name, () => {
      if (++seen === count) resolve();
    });
  });
}

/** A job that records when it ran and how many ran beside it. */
function recorder() {
  const starts: number[] = [];
  let running = 0;
  let most = 0;
  const t0 = Date.now();
  const job = async (value: unknown, ms = 30) => {
    starts.push(Date.now() - t0);
    running++;
    most = Math.max(most, running);
    await sleep(ms);
    running--;
    return value;
  };
  return { job, starts, most: () => most };
}

describe('limits', () => {
  it('maxConcurrent: never more jobs running than allowed, and every job runs', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 2 });
    const { job, most } = recorder();
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => limiter.schedule(job, n)));
    expect(results).toEqual([1, 2, 3, 4, 5]);
    expect(most()).toBe(2);
  });

  it('minTime: the k-th job starts no earlier than k × minTime after the first was granted', async () => {
    const limiter = new Bottleneck({ minTime: 60 });
    const granted: number[] = [];
    limiter.on('scheduled', () => granted.push(Date.now()));
    const starts: number[] = [];
    await Promise.all([1, 2, 3, 4].map(() => limiter.schedule(async () => starts.push(Date.now()))));
    const first = granted[0] as number;
    for (const [k, start] of starts.entries()) expect(start - first).toBeGreaterThanOrEqual(60 * k - 1);
    for (const [k, grant] of granted.entries()) expect(grant - first).toBeLessThan(60 * k + 50);
  });

  it('weight counts against maxConcurrent; a weight above it is refused with Bottleneck’s message', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 3 });
    const { job, most } = recorder();
    await Promise.all([limiter.schedule({ weight: 2 }, job, 'a'), limiter.schedule({ weight: 2 }, job, 'b')]);
    expect(most()).toBe(1);
    await expect(limiter.schedule({ weight: 4 }, job, 'c')).rejects.toThrow(
      'Impossible to add a job having a weight of 4 to a limiter having a maxConcurrent setting of 3',
    );
  });

  it('check() says whether a job would start now', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1 });
    expect(await limiter.check()).toBe(true);
    const running = limiter.schedule(() => sleep(50));
    await sleep(20);
    expect(await limiter.check()).toBe(false);
    await running;
    expect(await limiter.check()).toBe(true);
  });

  it('updateSettings raises maxConcurrent for the jobs already waiting', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1 });
    const { job, most } = recorder();
    const all = Promise.all([1, 2, 3, 4].map((n) => limiter.schedule(job, n, 80)));
    await sleep(20);
    await limiter.updateSettings({ maxConcurrent: 3 });
    await all;
    expect(most()).toBe(3);
  });
});

describe('order', () => {
  it('lower priority first, first in first out within a priority', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1 });
    const order: string[] = [];
    // The first runs until every other job is queued behind it.
    const queued = events(limiter, 'queued', 5);
    const run = (name: string) => async () => {
      order.push(name);
      if (name === 'first') await queued;
    };
    const jobs = [
      limiter.schedule({ priority: 5 }, run('first')),
      limiter.schedule({ priority: 7 }, run('low')),
      limiter.schedule({ priority: 1 }, run('high-a')),
      limiter.schedule({ priority: 1 }, run('high-b')),
      limiter.schedule({ priority: 5 }, run('mid')),
    ];
    await Promise.all(jobs);
    expect(order).toEqual(['first', 'high-a', 'high-b', 'mid', 'low']);
  });

  it('a priority outside 0-9 is clamped, a fraction is 5', async () => {
    const limiter = new Bottleneck();
    const seen: number[] = [];
    limiter.on('received', (info: { options: { priority: number } }) => seen.push(info.options.priority));
    await Promise.all([
      limiter.schedule({ priority: -3 }, async () => 1),
      limiter.schedule({ priority: 12 }, async () => 1),
      limiter.schedule({ priority: 2.5 }, async () => 1),
    ]);
    expect(seen).toEqual([0, 9, 5]);
  });
});

describe('highWater strategies', () => {
  /** Fills a limiter of one slot with a long job and `waiting` queued ones; answers their outcomes. */
  async function crowd(strategy: number, priorities: number[], extra: { priority: number }) {
    const limiter = new Bottleneck({ maxConcurrent: 1, highWater: priorities.length, strategy });
    const outcome = new Map<string, string>();
    const track = (name: string, promise: Promise<unknown>) =>
      promise.then(
        () => outcome.set(name, 'ran'),
        (error: Error) => outcome.set(name, error.message),
      );
    let release: () => void = () => undefined;
    const executing = events(limiter, 'executing');
    const all = [
      track(
        'running',
        limiter.schedule(() => new Promise<void>((resolve) => (release = resolve))),
      ),
    ];
    await executing;
    const queued = events(limiter, 'queued', priorities.length);
    priorities.forEach((priority, i) => {
      all.push(
        track(
          `p${priority}#${i}`,
          limiter.schedule({ priority }, async () => undefined),
        ),
      );
    });
    await queued;
    const decided = Promise.race([events(limiter, 'queued'), events(limiter, 'dropped')]);
    all.push(
      track(
        'new',
        limiter.schedule(extra, async () => undefined),
      ),
    );
    await decided;
    release();
    await Promise.all(all);
    return Object.fromEntries(outcome);
  }

  it('LEAK drops the newest of the lowest priority to make room', async () => {
    const outcome = await crowd(Bottleneck.strategy.LEAK, [5, 8, 8], { priority: 5 });
    expect(outcome['p8#2']).toBe('This job has been dropped by Bottleneck');
    expect(outcome).toMatchObject({ running: 'ran', 'p5#0': 'ran', 'p8#1': 'ran', new: 'ran' });
  });

  it('OVERFLOW drops the new job', async () => {
    const outcome = await crowd(Bottleneck.strategy.OVERFLOW, [5, 5], { priority: 0 });
    expect(outcome).toEqual({
      running: 'ran',
      'p5#0': 'ran',
      'p5#1': 'ran',
      new: 'This job has been dropped by Bottleneck',
    });
  });

  it('OVERFLOW_PRIORITY drops a queued job of lower priority only', async () => {
    const outcome = await crowd(Bottleneck.strategy.OVERFLOW_PRIORITY, [5, 5], { priority: 5 });
    expect(outcome.new).toBe('This job has been dropped by Bottleneck');
    const lower = await crowd(Bottleneck.strategy.OVERFLOW_PRIORITY, [5, 6], { priority: 5 });
    expect(lower['p6#1']).toBe('This job has been dropped by Bottleneck');
    expect(lower.new).toBe('ran');
  });

  it('BLOCK drops every queued job and refuses new ones for the penalty', async () => {
    const limiter = new Bottleneck({
      maxConcurrent: 1,
      highWater: 1,
      strategy: Bottleneck.strategy.BLOCK,
      penalty: 100,
    });
    const dropped: unknown[] = [];
    limiter.on('dropped', (info: { args: unknown[] }) => dropped.push(info.args[0]));
    const running = limiter.schedule(async (n: number) => sleep(30).then(() => n), 0);
    await sleep(10);
    const queued = limiter.schedule(async (n: number) => n, 1).catch((e: Error) => e.message);
    await sleep(10);
    const over = limiter.schedule(async (n: number) => n, 2).catch((e: Error) => e.message);
    expect(await queued).toBe('This job has been dropped by Bottleneck');
    expect(await over).toBe('This job has been dropped by Bottleneck');
    await sleep(20);
    expect(await limiter.schedule(async (n: number) => n, 3).catch((e: Error) => e.message)).toBe(
      'This job has been dropped by Bottleneck',
    );
    expect(await running).toBe(0);
    expect(dropped).toEqual([1, 2, 3]);
    await sleep(110);
    const t0 = Date.now();
    expect(await limiter.schedule(async (n: number) => n, 4)).toBe(4);
    expect(Date.now() - t0).toBeLessThan(100);
  });

  it('rejectOnDrop: false leaves a dropped job pending and still emits dropped', async () => {
    const limiter = new Bottleneck({
      maxConcurrent: 1,
      highWater: 0,
      strategy: Bottleneck.strategy.OVERFLOW,
      rejectOnDrop: false,
    });
    let dropped = 0;
    limiter.on('dropped', () => dropped++);
    const running = limiter.schedule(() => sleep(20));
    await sleep(5);
    let settled = false;
    limiter
      .schedule(async () => 1)
      .finally(() => {
        settled = true;
      });
    await running;
    await sleep(20);
    expect({ dropped, settled }).toEqual({ dropped: 1, settled: false });
  });
});

describe('reservoir', () => {
  it('starts take from it; at 0 jobs wait for the refresh, and depleted is emitted', async () => {
    const t0 = Date.now();
    const limiter = new Bottleneck({
      reservoir: 2,
      reservoirRefreshInterval: 100,
      reservoirRefreshAmount: 2,
    });
    let depleted = 0;
    limiter.on('depleted', () => depleted++);
    const ran: number[] = [];
    await Promise.all([1, 2, 3, 4, 5].map((n) => limiter.schedule(async () => ran.push(n))));
    // 2 jobs, then 2 after the first refresh, then the last after the second: timers never fire early.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(199);
    expect(ran).toEqual([1, 2, 3, 4, 5]);
    expect(depleted).toBe(2);
    expect(await limiter.currentReservoir()).toBe(1);
  });

  it('incrementReservoir lets waiting jobs go; the increase stops at its maximum', async () => {
    const limiter = new Bottleneck({ reservoir: 0 });
    let ran = false;
    const job = limiter.schedule(async () => {
      ran = true;
    });
    await sleep(30);
    expect(ran).toBe(false);
    expect(await limiter.incrementReservoir(3)).toBe(3);
    await job;
    expect(await limiter.currentReservoir()).toBe(2);

    const growing = new Bottleneck({
      reservoir: 0,
      reservoirIncreaseInterval: 20,
      reservoirIncreaseAmount: 2,
      reservoirIncreaseMaximum: 5,
    });
    await sleep(130);
    expect(await growing.currentReservoir()).toBe(5);
    await growing.disconnect();
  });

  it('a job of weight 0 takes nothing and runs while it is empty, as in Bottleneck (depleted: it is 0)', async () => {
    const limiter = new Bottleneck({ reservoir: 0 });
    let depleted = 0;
    limiter.on('depleted', () => depleted++);
    expect(await limiter.schedule({ weight: 0 }, async () => 'ran')).toBe('ran');
    expect(await limiter.currentReservoir()).toBe(0);
    expect(depleted).toBe(1);
  });
});

describe('jobs', () => {
  it('expiration fails a job that runs too long with Bottleneck’s message', async () => {
    const limiter = new Bottleneck();
    await expect(limiter.schedule({ expiration: 30 }, () => sleep(200))).rejects.toThrow(
      new BottleneckError('This job timed out after 30 ms.'),
    );
  });

  it('a failed listener that returns a delay retries the job after it, keeping its slot', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1 });
    const retries: string[] = [];
    limiter.on('failed', (_error: Error, info: { retryCount: number }) =>
      info.retryCount < 2 ? 25 : undefined,
    );
    limiter.on('retry', (message: string) => retries.push(message));
    let attempts = 0;
    const t0 = Date.now();
    const result = await limiter.schedule({ id: 'flaky' }, async () => {
      attempts++;
      if (attempts < 3) throw new Error('not yet');
      return 'ok';
    });
    expect(result).toBe('ok');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(49);
    expect(retries).toEqual(['Retrying flaky after 25 ms', 'Retrying flaky after 25 ms']);
    let failures = 0;
    await expect(
      limiter.schedule(async () => {
        failures++;
        throw new Error('always');
      }),
    ).rejects.toThrow('always');
    expect(failures).toBe(3);
  });

  it('ids: a duplicate is refused; jobStatus, jobs and counts follow each job', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1, trackDoneStatus: true });
    let release: () => void = () => undefined;
    const executing = new Promise<void>((resolve) => limiter.once('executing', () => resolve()));
    const first = limiter.schedule({ id: 'a' }, () => new Promise<void>((resolve) => (release = resolve)));
    await expect(limiter.schedule({ id: 'a' }, async () => 1)).rejects.toThrow(
      'A job with the same id already exists (id=a)',
    );
    const queuedB = new Promise<void>((resolve) =>
      limiter.on('queued', (info: { options: { id: string } }) => info.options.id === 'b' && resolve()),
    );
    const second = limiter.schedule({ id: 'b' }, async () => 1);
    await Promise.all([executing, queuedB]);
    expect(limiter.jobStatus('a')).toBe('EXECUTING');
    expect(limiter.jobStatus('b')).toBe('QUEUED');
    expect(limiter.counts()).toEqual({ RECEIVED: 0, QUEUED: 1, RUNNING: 0, EXECUTING: 1, DONE: 0 });
    release();
    await Promise.all([first, second]);
    expect(limiter.jobs('DONE').sort()).toEqual(['a', 'b']);
    expect(limiter.jobStatus('nope')).toBeNull();
  });

  it('submit takes a node-style callback', async () => {
    const limiter = new Bottleneck();
    const answer = await new Promise((resolve) => {
      limiter.submit(
        (a: number, b: number, callback: (error: null, sum: number) => void) => callback(null, a + b),
        2,
        3,
        (error: unknown, sum: number) => resolve([error, sum]),
      );
    });
    expect(answer).toEqual([null, 5]);
  });

  it('wrap keeps this and arguments; withOptions gives job options', async () => {
    const limiter = new Bottleneck();
    const thing = {
      base: 10,
      add(n: number) {
        return (this as { base: number }).base + n;
      },
    };
    const wrapped = limiter.wrap(thing.add);
    expect(await wrapped.call(thing, 5)).toBe(15);
    expect(await limiter.wrap((n: number) => n * 2).withOptions({ id: 'w' }, 4)).toBe(8);
  });

  it('chain runs each job through the next limiter too', async () => {
    const outer = new Bottleneck({ maxConcurrent: 5 });
    const inner = new Bottleneck({ maxConcurrent: 1 });
    outer.chain(inner);
    const { job, most } = recorder();
    await Promise.all([1, 2, 3].map((n) => outer.schedule(job, n, 20)));
    expect(most()).toBe(1);
  });
});

describe('events', () => {
  it('fire in Bottleneck’s order with its info shapes', async () => {
    const limiter = new Bottleneck();
    const seen: string[] = [];
    for (const name of ['received', 'queued', 'scheduled', 'executing', 'done', 'empty', 'idle']) {
      limiter.on(name, (info?: object) =>
        seen.push(info === undefined ? name : `${name}:${Object.keys(info).join(',')}`),
      );
    }
    await limiter.schedule(async () => 1);
    await sleep(5);
    expect(seen).toEqual([
      'received:args,options',
      'queued:args,options,reachedHWM,blocked',
      'empty',
      'scheduled:args,options',
      'executing:args,options,retryCount',
      'done:args,options,retryCount',
      'idle',
    ]);
  });

  it('a listener that throws emits error; once listens once', async () => {
    const limiter = new Bottleneck();
    const errors: string[] = [];
    let onces = 0;
    limiter.on('error', (error: Error) => errors.push(error.message));
    limiter.on('done', () => {
      throw new Error('listener broke');
    });
    limiter.once('done', () => onces++);
    await limiter.schedule(async () => 1);
    await limiter.schedule(async () => 2);
    expect(errors).toEqual(['listener broke', 'listener broke']);
    expect(onces).toBe(1);
  });
});

describe('stop and construction', () => {
  it('stop drops waiting jobs, lets the running one finish, and refuses new ones', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1 });
    const running = limiter.schedule(() => sleep(40).then(() => 'finished'));
    const waiting = limiter.schedule(async () => 'never').catch((e: Error) => e.message);
    await sleep(10);
    await limiter.stop();
    expect(await running).toBe('finished');
    expect(await waiting).toBe('This limiter has been stopped.');
    await expect(limiter.schedule(async () => 1)).rejects.toThrow(
      'This limiter has been stopped and cannot accept new jobs.',
    );
    await expect(limiter.stop()).rejects.toThrow('stop() has already been called');
  });

  it('stop drops the jobs received just before it, too', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1 });
    const outcomes = [1, 2].map((n) => limiter.schedule(async () => n).catch((e: Error) => e.message));
    await limiter.stop();
    expect(await Promise.all(outcomes)).toEqual([
      'This limiter has been stopped.',
      'This limiter has been stopped.',
    ]);
  });

  it('stop({ dropWaitingJobs: false }) resolves once every job has run', async () => {
    const limiter = new Bottleneck({ maxConcurrent: 1 });
    const ran: number[] = [];
    for (const n of [1, 2, 3]) void limiter.schedule(async () => ran.push(n));
    await limiter.stop({ dropWaitingJobs: false });
    expect(ran).toEqual([1, 2, 3]);
  });

  it('refuses Bottleneck v1 arguments and bad options, naming them', () => {
    expect(() => new (Bottleneck as unknown as new (...a: unknown[]) => unknown)(1, 100)).toThrow(
      BottleneckError,
    );
    expect(() => new Bottleneck({ maxConcurrent: 0 })).toThrow(
      'maxConcurrent: 0 must be an integer from 1 to 10000, or null (no limit)',
    );
    expect(() => new Bottleneck({ minTime: -1 })).toThrow('minTime: -1 must be a number from 0');
    expect(() => new Bottleneck({ strategy: 9 })).toThrow('strategy: 9 must be one of');
    expect(() => new Bottleneck({ datastore: 'mongo' })).toThrow('Invalid datastore type: mongo');
  });
});

describe('Group and Batcher', () => {
  it('Group: one limiter per key with the group’s options, created once, deleted on demand', async () => {
    const group = new Bottleneck.Group({ maxConcurrent: 1, id: 'g' });
    const created: string[] = [];
    group.on('created', (_limiter: unknown, key: string) => created.push(key));
    const { job, most } = recorder();
    await Promise.all([group.key('a').schedule(job, 1, 20), group.key('a').schedule(job, 2, 20)]);
    expect(most()).toBe(1);
    group.key('b');
    expect(created).toEqual(['a', 'b']);
    expect(group.keys()).toEqual(['a', 'b']);
    expect(group.key('a').id).toBe('g-a');
    expect(group.limiters().map(({ key }) => key)).toEqual(['a', 'b']);
    expect(await group.deleteKey('a')).toBe(true);
    expect(await group.deleteKey('a')).toBe(false);
    expect(await group.clusterKeys()).toEqual(['b']);
  });

  it('Group: a limiter unused for the timeout is deleted', async () => {
    const group = new Bottleneck.Group({ timeout: 60 });
    await group.key('idle').schedule(async () => 1);
    await sleep(150);
    expect(group.keys()).toEqual([]);
  });

  it('Batcher: a batch at maxSize, or maxTime after its first item', async () => {
    const batcher = new Bottleneck.Batcher({ maxSize: 3, maxTime: 50 });
    const batches: unknown[][] = [];
    batcher.on('batch', (items: unknown[]) => batches.push(items));
    await Promise.all([batcher.add(1), batcher.add(2), batcher.add(3)]);
    const t0 = Date.now();
    await batcher.add(4);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(48);
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });
});
