/**
 * Over a real socket: a calendar rule's RateLimit headers and Retry-After count down to the
 * period's exact end (a 23-hour day in America/New_York), rounded up to whole seconds as the
 * headers require, never to a nominal 24-hour window.
 */
import { createServer } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpGuard } from '../../src/http/node.js';
import { memoryStore } from '../../src/index.js';
import { listen } from '../http/support/apps.js';

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

describe('calendar rules in HTTP headers', () => {
  it("give the period's end: RateLimit-Reset and Retry-After in seconds, rounded up", async () => {
    // 00:00:01.500 EST on 2026-03-08: the day ends at midnight EDT, 22:59:58.5 later.
    let now = Date.parse('2026-03-08T05:00:01.500Z');
    const guard = createHttpGuard({
      store: memoryStore({ clock: () => now }),
      rules: {
        name: 'daily',
        algorithm: 'fixed-window',
        limit: 1,
        period: 'day',
        timeZone: 'America/New_York',
      },
    });
    const server = createServer(async (req, res) => {
      if (await guard(req, res)) res.end('ok');
    });
    const app = await listen(server);
    closers.push(app.close);
    const untilEnd = Date.parse('2026-03-09T04:00:00Z') - now;
    expect(untilEnd).toBe(23 * 3_600_000 - 1_500);
    const first = await fetch(app.url);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-reset')).toBe(String(Math.ceil(untilEnd / 1000)));
    now += 500;
    const second = await fetch(app.url);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe(String(Math.ceil((untilEnd - 500) / 1000)));
    expect(second.headers.get('ratelimit-reset')).toBe(String(Math.ceil((untilEnd - 500) / 1000)));
  });
});
