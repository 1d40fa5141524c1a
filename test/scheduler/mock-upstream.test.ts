/**
 * The mock upstream the scheduler tests and the lab's model rely on: its hidden limit, its
 * headers in each dialect (read back through the scheduler's own header readers), its body and
 * its counters, over real sockets.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { goDuration } from '../../src/cli/compare/hidden-limit.js';
import { budgetReader, type HeaderDialect } from '../../src/scheduler/upstream-headers.js';
import { type MockUpstream, type MockUpstreamOptions, startMockUpstream } from '../support/mock-upstream.js';

let upstream: MockUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

async function start(options: MockUpstreamOptions): Promise<MockUpstream> {
  upstream = await startMockUpstream(options);
  return upstream;
}

function call(target: MockUpstream, tokens?: number): Promise<Response> {
  return fetch(`${target.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: tokens === undefined ? '' : JSON.stringify({ tokens }),
  });
}

function reading(dialect: HeaderDialect, response: Response) {
  return budgetReader(dialect)?.({ status: response.status, headers: response.headers }, Date.now());
}

// A window no test outlives, so every count below is exact.
const LONG = 600_000;

describe('mock upstream', () => {
  it('serves the limit of requests with OpenAI headers, then answers 429 with Retry-After', async () => {
    const target = await start({ requests: 3, tokens: 1000, windowMs: LONG });
    const remaining: (number | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await call(target, 100);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ object: 'chat.completion', usage: { total_tokens: 100 } });
      const budgets = reading('openai', response)?.budgets;
      expect(budgets?.requests?.limit).toBe(3);
      expect(budgets?.tokens?.limit).toBe(1000);
      remaining.push(budgets?.requests?.remaining, budgets?.tokens?.remaining);
    }
    expect(remaining).toEqual([2, 900, 1, 800, 0, 700]);
    const refused = await call(target, 100);
    expect(refused.status).toBe(429);
    expect((await refused.json()) as unknown).toMatchObject({ error: { type: 'rate_limit_exceeded' } });
    const pause = reading('openai', refused)?.retryAfterMs ?? 0;
    expect(pause).toBeGreaterThan(0);
    expect(pause).toBeLessThanOrEqual(LONG);
    expect(target.counts()).toEqual({
      requests: 4,
      served: 3,
      limited: 1,
      tokens: 300,
      inFlight: 0,
      maxInFlight: 1,
    });
    expect(target.answers.map((answer) => [answer.status, answer.tokens])).toEqual([
      [200, 100],
      [200, 100],
      [200, 100],
      [429, 0],
    ]);
  });

  it('refuses a request its tokens would take past the token limit, charging nothing', async () => {
    const target = await start({ requests: 10, tokens: 1000, windowMs: LONG });
    expect((await call(target, 600)).status).toBe(200);
    expect((await call(target, 600)).status).toBe(429);
    expect((await call(target, 400)).status).toBe(200);
    expect((await call(target)).status).toBe(200);
    expect(target.counts()).toMatchObject({ served: 3, limited: 1, tokens: 1000 });
  });

  it('opens a new window at its reset', async () => {
    const target = await start({ requests: 1, tokens: 1000, windowMs: 300 });
    const first = await call(target);
    const reset = reading('openai', first)?.budgets.requests?.resetMs ?? 0;
    expect(reset).toBeLessThanOrEqual(300);
    await new Promise((resolve) => setTimeout(resolve, reset + 20));
    expect((await call(target)).status).toBe(200);
  });

  it('speaks GitHub primary (429, remaining 0, no retry-after) and secondary (403 + retry-after)', async () => {
    const primary = await start({ requests: 1, windowMs: LONG, dialect: 'github' });
    const ok = await call(primary);
    expect(reading('github', ok)?.budgets.requests).toMatchObject({ limit: 1, remaining: 0 });
    expect(ok.headers.get('x-ratelimit-resource')).toBe('core');
    const limited = await call(primary);
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, null]);
    expect(reading('github', limited)?.retryAfterMs).toBeGreaterThan(0);
    await primary.close();

    const secondary = await start({ requests: 1, windowMs: LONG, dialect: 'github-secondary' });
    expect(reading('github', await call(secondary))?.budgets.requests).toMatchObject({
      limit: 5000,
      remaining: 4999,
    });
    const refused = await call(secondary);
    expect(refused.status).toBe(403);
    expect(reading('github', refused)?.retryAfterMs).toBe(Number(refused.headers.get('retry-after')) * 1000);
  });

  it('speaks IETF draft-10 and Anthropic', async () => {
    const ietf = await start({ requests: 2, tokens: 50, windowMs: LONG, dialect: 'ietf' });
    const budgets = reading('ietf', await call(ietf, 20))?.budgets;
    expect(budgets?.requests).toMatchObject({ limit: 2, remaining: 1 });
    expect(budgets?.tokens).toMatchObject({ limit: 50, remaining: 30 });
    await ietf.close();

    const anthropic = await start({ requests: 2, tokens: 50, windowMs: LONG, dialect: 'anthropic' });
    const read = reading('anthropic', await call(anthropic, 20))?.budgets;
    expect(read?.requests).toMatchObject({ limit: 2, remaining: 1 });
    expect(read?.tokens).toMatchObject({ limit: 50, remaining: 30 });
    expect(read?.tokens?.resetMs).toBeLessThanOrEqual(LONG);
  });

  it('counts requests in flight, and refuses past its hidden concurrency', async () => {
    const target = await start({ requests: 100, windowMs: LONG, concurrency: 2 });
    target.pause();
    const first = [call(target), call(target)];
    while (target.counts().inFlight < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await call(target)).status).toBe(429);
    target.resume();
    expect((await Promise.all(first)).map((response) => response.status)).toEqual([200, 200]);
    expect(target.counts()).toMatchObject({ served: 2, limited: 1, inFlight: 0, maxInFlight: 2 });
  });

  it('answers 400 to a body whose tokens are not a whole number', async () => {
    const target = await start({});
    for (const body of ['{', '{"tokens":-1}', '{"tokens":1.5}', '{"tokens":"7"}']) {
      const response = await fetch(target.url, { method: 'POST', body });
      expect(response.status, body).toBe(400);
    }
    expect(target.counts()).toMatchObject({ served: 0, limited: 0 });
  });

  it('writes durations as OpenAI (Go) does', () => {
    expect([12, 999.2, 1000, 1500, 360_000, 3_723_000].map(goDuration)).toEqual([
      '12ms',
      '1s',
      '1s',
      '1.5s',
      '6m0s',
      '1h2m3s',
    ]);
  });
});
