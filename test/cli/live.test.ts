/**
 * The admin listener's heavy hitters and live page, on a real gateway process (memory store):
 * `GET /top` answers the clients denied or checked most as the gateway keys them, validates its
 * query, and the page at `GET /`, loaded in headless Chromium while the gateway is under load,
 * shows non-zero rates, the top denied key and the adaptive limit. `FLOODGATE_SCREENSHOT=1` saves its screenshot
 * as docs/live-page.png.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, type RunningCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

let cli: RunningCli;
let url: string;
let admin: string;

beforeAll(async () => {
  const adminPort = String(await freePort());
  cli = startCli([
    'serve',
    '--port',
    '0',
    '--admin-port',
    adminPort,
    '--limit',
    '5/1m',
    '--trust-proxy',
    'loopback',
    '--adaptive',
  ]);
  const listening = await cli.waitForLog((line) => line.event === 'listening', 45_000);
  url = listening.url as string;
  admin = listening.admin as string;
}, 60_000);

afterAll(() => cli?.kill());

async function requests(ip: string, times: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < times; i++) {
    const response = await fetch(url, { headers: { 'x-forwarded-for': ip } });
    await response.arrayBuffer();
    statuses.push(response.status);
  }
  return statuses;
}

describe('GET /top', () => {
  it('answers the clients denied and checked most, as the gateway keys them, most first', async () => {
    await requests('203.0.113.7', 12);
    await requests('203.0.113.8', 8);
    await requests('203.0.113.9', 2);
    const denied = await fetch(`${admin}/top`);
    expect(denied.headers.get('content-type')).toBe('application/json');
    expect(await denied.json()).toEqual([
      { key: 'ip:203.0.113.7', count: 7, error: 0 },
      { key: 'ip:203.0.113.8', count: 3, error: 0 },
    ]);
    expect(await (await fetch(`${admin}/top?by=checked&limit=2`)).json()).toEqual([
      { key: 'ip:203.0.113.7', count: 12, error: 0 },
      { key: 'ip:203.0.113.8', count: 8, error: 0 },
    ]);
  });

  it('refuses a bad query with a 400 naming the parameter', async () => {
    for (const [query, error] of [
      ['by=keys', 'by: "keys" must be denied or checked'],
      ['limit=0', 'limit: "0" must be an integer from 1 to 1000'],
      ['limit=1001', 'limit: "1001" must be an integer from 1 to 1000'],
      ['limit=1e3', 'limit: "1e3" must be an integer from 1 to 1000'],
      ['limit=', 'limit: "" must be an integer from 1 to 1000'],
      ['key=ip:1', 'unknown parameter "key"; /top takes by, limit and fleet'],
      ['fleet=yes', 'fleet: "yes" must be true or false'],
    ]) {
      const response = await fetch(`${admin}/top?${query}`);
      expect([response.status, await response.json()]).toEqual([400, { error }]);
    }
  });

  it('is on the admin listener only: the public port forwards /top to the upstream', async () => {
    const response = await fetch(`${url}/top`, { headers: { 'x-forwarded-for': '198.51.100.1' } });
    await response.arrayBuffer();
    expect(response.headers.get('ratelimit-policy')).not.toBeNull();
  });
});

describe('the live page', () => {
  it('serves one self-contained page with a strict content security policy', async () => {
    const response = await fetch(`${admin}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toMatch(
      /^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/]+=*'; style-src 'unsafe-inline'; connect-src 'self';/,
    );
    const html = await response.text();
    expect(html).not.toMatch(/<script src|<link |https?:\/\//);
  });

  it('shows non-zero rates and the top denied key in headless Chromium while the gateway is under load', async () => {
    const profile = await mkdtemp(join(tmpdir(), 'floodgate-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 860 },
    });
    let loading = true;
    // Steady load: a hammering client (denied), a client at its limit and a client within it.
    const load = (async () => {
      while (loading) {
        await Promise.all([
          requests('192.0.2.66', 4),
          requests('192.0.2.77', 1),
          requests(`192.0.2.${Math.floor(Math.random() * 50)}`, 1),
        ]);
      }
    })();
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      page.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      await page.goto(`${admin}/`);
      // Two readings make a rate; wait for a reading with traffic in it.
      await page.waitForFunction(
        () => {
          // Runs in the page (the test's own types have no DOM).
          const { document } = globalThis as unknown as {
            document: {
              body: { dataset: Record<string, string> };
              getElementById(id: string): { textContent: string };
            };
          };
          const denials = Number(document.getElementById('rate-denials').textContent.replace(/,/g, ''));
          return Number(document.body.dataset.ready) >= 3 && denials > 0;
        },
        undefined,
        { timeout: 30_000 },
      );
      const decisions = Number((await page.textContent('#rate-decisions'))?.replace(/,/g, ''));
      const denials = Number((await page.textContent('#rate-denials'))?.replace(/,/g, ''));
      expect(decisions).toBeGreaterThan(0);
      expect(denials).toBeGreaterThan(0);
      expect(await page.textContent('#top tr:first-child td:first-child')).toBe('ip:192.0.2.66');
      expect(await page.textContent('#state')).toBe('healthy');
      expect(await page.textContent('#routes')).toContain('default');
      expect(await page.textContent('#p99')).toMatch(/µs|ms/);
      // The adaptive limit in front of the upstream: its limit, what it holds, and its latency.
      expect(await page.textContent('#adaptive tr:first-child td:first-child')).toBe('upstream');
      expect(Number(await page.textContent('#adaptive tr:first-child td:nth-child(2)'))).toBeGreaterThan(0);
      expect(await page.textContent('#adaptive tr:first-child td:nth-child(5)')).toMatch(/µs|ms/);
      expect(errors).toEqual([]);
      // The docs' screenshot is taken again on request only: a test run leaves the tree as it was.
      const shot =
        process.env.FLOODGATE_SCREENSHOT === '1'
          ? join(ROOT, 'docs', 'live-page.png')
          : join(profile, 'live.png');
      expect((await page.screenshot({ path: shot })).length).toBeGreaterThan(10_000);
    } finally {
      loading = false;
      await load;
      await context.close();
      await rm(profile, { recursive: true, force: true });
    }
  }, 90_000);
});
