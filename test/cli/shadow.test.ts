/**
 * `floodgate serve` with a shadow rule beside an enforced one (real sockets, the demo upstream):
 * the shadow rule never answers 429 and is not announced in headers, its would-be denials are
 * counted in `floodgate_shadow_denied_total`, and the enforced rule's 429s are unchanged.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

let dir: string;
let cli: RunningCli;
let url: string;
let admin: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floodgate-shadow-'));
  const config = join(dir, 'shadow.yaml');
  await writeFile(
    config,
    'rules:\n  - { name: minute, limit: 5/1m }\n  - { name: trial, limit: 2/1m, shadow: true }\n',
  );
  const adminPort = String(await freePort());
  cli = startCli(['serve', '--port', '0', '--admin-port', adminPort, '--config', config]);
  const listening = await cli.waitForLog((line) => line.event === 'listening', 45_000);
  url = listening.url as string;
  admin = listening.admin as string;
});

afterAll(async () => {
  cli?.kill();
  await cli?.exited;
  await rm(dir, { recursive: true, force: true });
});

it('a shadow rule over its limit never denies, is counted in metrics, and leaves the enforced rule unchanged', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) {
    const response = await fetch(`${url}/`);
    statuses.push(response.status);
    expect(response.headers.get('ratelimit-policy') ?? '').not.toContain('trial');
    await response.arrayBuffer();
  }
  // The enforced limit of 5 alone decides; the shadow rule's limit of 2 is never sent as a 429.
  expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  const line = metrics.split('\n').find((each) => each.startsWith('floodgate_shadow_denied_total{'));
  expect(line).toMatch(/rule="trial"/);
  // Requests 3 to 5 were allowed by the enforced rule and would have been denied by the shadow
  // one; 6 and 7 were denied by the enforced rule, and the shadow rule still counts them.
  expect(Number(line?.slice(line.lastIndexOf(' ') + 1))).toBe(5);
});
