/**
 * The demo API's `GET /` (what `npm start` shows a newcomer): every URL its hint lists answers
 * 200 at the address it names, through a real `floodgate serve` process. /metrics and /healthz
 * are on the admin listener, so the hint names that listener's address as configured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

const LIMIT_HINT = 'Run curl -i several times and watch the RateLimit headers; past the limit you get a 429.';

interface Demo {
  cli: RunningCli;
  url: string;
}

interface DemoIndex {
  try: string[];
  hint: string;
}

async function startDemo(adminPort: string): Promise<Demo> {
  const cli = startCli(['serve', '--port', '0', '--admin-port', adminPort]);
  const listening = await cli.waitForLog((line) => line.event === 'listening', 45_000);
  return { cli, url: listening.url as string };
}

let adminPort: number;
let withAdmin: Demo;
let withoutAdmin: Demo;

beforeAll(async () => {
  adminPort = await freePort();
  [withAdmin, withoutAdmin] = await Promise.all([startDemo(String(adminPort)), startDemo('0')]);
});

afterAll(() => {
  withAdmin?.cli.kill();
  withoutAdmin?.cli.kill();
});

async function index(demo: Demo): Promise<DemoIndex> {
  const response = await fetch(`${demo.url}/`);
  expect(response.status).toBe(200);
  return (await response.json()) as DemoIndex;
}

describe('the demo API hint', () => {
  it('lists /metrics and /healthz at the admin listener it runs, and every listed URL answers 200', async () => {
    const admin = `http://127.0.0.1:${adminPort}`;
    const { try: routes, hint } = await index(withAdmin);
    for (const entry of routes) {
      const [method = '', target = ''] = entry.split(' ');
      const response = await fetch(new URL(target, withAdmin.url), {
        method,
        ...(method === 'POST' ? { body: 'hello' } : {}),
      });
      expect(`${entry}: ${response.status}`).toBe(`${entry}: 200`);
    }
    expect(routes).toEqual([
      'GET /hello',
      'GET /time',
      'POST /echo',
      `GET ${admin}/metrics`,
      `GET ${admin}/healthz`,
    ]);
    expect(hint).toBe(
      `${LIMIT_HINT} /metrics and /healthz are on the admin listener, ${admin}, not on this port.`,
    );
  });

  it('lists no admin URL when the admin listener is off, and says so', async () => {
    const { try: routes, hint } = await index(withoutAdmin);
    expect(routes).toEqual(['GET /hello', 'GET /time', 'POST /echo']);
    expect(hint).toBe(`${LIMIT_HINT} The admin listener (/metrics, /healthz) is off (admin port 0).`);
  });
});
