/** plan(req): per-tenant plans through the adapters, over real sockets. */
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { parseList } from 'structured-headers';
import { afterAll, describe, expect, it } from 'vitest';
import { apiKeyOrAddress as expressKey, rateLimit } from '../../src/http/express.js';
import { apiKeyOrAddress as fastifyKey, floodgate } from '../../src/http/fastify.js';
import { createLimiter } from '../../src/index.js';

const plans = {
  free: [{ name: 'minute', algorithm: 'fixed-window', limit: 1, window: '1h' }],
  pro: [{ name: 'minute', algorithm: 'fixed-window', limit: 3, window: '1h' }],
} as const;
const planOf = (header: unknown) => (header === 'pro' ? 'pro' : undefined);
const tenantKeys = { header: 'x-api-key', known: (key: string) => key.startsWith('tenant-') };
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

async function statuses(url: string, plan: string | undefined, n: number) {
  const seen: { status: number; policy: string | null }[] = [];
  for (let i = 0; i < n; i++) {
    const headers: Record<string, string> = { 'x-api-key': `tenant-${plan ?? 'free'}` };
    if (plan !== undefined) headers['x-plan'] = plan;
    const response = await fetch(url, { headers });
    await response.arrayBuffer();
    seen.push({ status: response.status, policy: response.headers.get('ratelimit-policy') });
  }
  return seen;
}

describe.each(['express', 'fastify'])('%s: plan(req)', (framework) => {
  it("applies the request's plan and names it in the policy", async () => {
    const limiter = createLimiter({ plans, defaultPlan: 'free', prefix: `plans-${framework}` });
    let url: string;
    if (framework === 'express') {
      const app = express();
      app.use(
        rateLimit({
          limiter,
          key: expressKey(tenantKeys),
          plan: (req) => planOf(req.headers['x-plan']),
          headers: 'draft-10',
        }),
      );
      app.get('/', (_req, res) => {
        res.send('ok');
      });
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      closers.push(() => new Promise((resolve) => server.close(resolve)));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    } else {
      const app = Fastify();
      await app.register(floodgate, {
        limiter,
        key: fastifyKey(tenantKeys),
        plan: async (request) => planOf(request.headers['x-plan']),
        headers: 'draft-10',
      });
      app.get('/', async () => 'ok');
      url = `${await app.listen({ port: 0, host: '127.0.0.1' })}/`;
      closers.push(() => app.close());
    }
    const free = await statuses(url, undefined, 2);
    expect(free.map((seen) => seen.status)).toEqual([200, 429]);
    const pro = await statuses(url, 'pro', 4);
    expect(pro.map((seen) => seen.status)).toEqual([200, 200, 200, 429]);
    const [item] = parseList(pro[0]?.policy ?? '');
    expect(item?.[0]).toBe('pro.minute');
    expect(item?.[1].get('q')).toBe(3);
    expect(parseList(free[0]?.policy ?? '')[0]?.[0]).toBe('free.minute');
  });
});
