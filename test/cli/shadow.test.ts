/**
 * `floodgate serve` with a shadow rule beside an enforced one (real sockets, the demo upstream):
 * the shadow rule never answers 429 and is not announced in headers, its would-be denials are
 * counted in `floodgate_shadow_denied_total` and named in the request log (`shadowDenied`), and
 * the enforced rule's 429s are unchanged.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

let dir: string;
const started: RunningCli[] = [];

async function startGateway(args: string[]): Promise<{ url: string; admin: string; cli: RunningCli }> {
  const adminPort = String(await freePort());
  const cli = startCli(['serve', '--port', '0', '--admin-port', adminPort, ...args]);
  started.push(cli);
  const listening = await cli.waitForLog((line) => line.event === 'listening', 45_000);
  return { url: listening.url as string, admin: listening.admin as string, cli };
}

/** The `shadowDenied` field of each of the first `count` request log lines (undefined where absent). */
async function shadowDeniedLogged(cli: RunningCli, count: number): Promise<unknown[]> {
  const requests = () => cli.logs.filter((line) => line.event === 'request');
  // A request's line is written as its response ends, which may be after the client has read it.
  await cli.waitForLog(() => requests().length >= count);
  return requests().map((line) => line.shadowDenied);
}

/** A counter's value for the series whose labels include `labels`, 0 when absent. */
function metric(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

/**
 * Sends `count` requests to `path` in turn and tells which the gateway limited (429) and which
 * it forwarded (the demo upstream may answer 404: it has few paths); `look` checks each response.
 */
async function outcomesOf(
  url: string,
  path: string,
  count: number,
  look: (response: Response) => void,
  headers: Record<string, string> = {},
) {
  const outcomes: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${url}${path}`, { headers });
    outcomes.push(response.status === 429 ? 'limited' : 'forwarded');
    look(response);
    await response.arrayBuffer();
  }
  return outcomes;
}

const forwarded = (count: number) => Array.from({ length: count }, () => 'forwarded');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floodgate-shadow-'));
});

afterAll(async () => {
  for (const cli of started) cli.kill();
  await Promise.all(started.map((cli) => cli.exited));
  await rm(dir, { recursive: true, force: true });
});

it('a shadow rule over its limit never denies, is counted in metrics, and leaves the enforced rule unchanged', async () => {
  const config = join(dir, 'shadow.yaml');
  await writeFile(
    config,
    'rules:\n  - { name: minute, limit: 5/1m }\n  - { name: trial, limit: 2/1m, shadow: true }\n',
  );
  const { url, admin, cli } = await startGateway(['--config', config]);
  // The enforced limit of 5 alone decides; the shadow rule's limit of 2 is never sent as a 429.
  const outcomes = await outcomesOf(url, '/', 7, (response) =>
    expect(response.headers.get('ratelimit-policy') ?? '').not.toContain('trial'),
  );
  expect(outcomes).toEqual([...forwarded(5), 'limited', 'limited']);
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  // Requests 3 to 5 were allowed by the enforced rule and would have been denied by the shadow
  // one; 6 and 7 were denied by the enforced rule, and the shadow rule still counts them.
  expect(metric(metrics, 'floodgate_shadow_denied_total', { route: 'default', rule: 'trial' })).toBe(5);
  // The log says the same, request by request: the field is there only when a shadow rule denied.
  const trial = ['trial'];
  expect(await shadowDeniedLogged(cli, 7)).toEqual([undefined, undefined, trial, trial, trial, trial, trial]);
});

it('regression: the request log names the shadow rules that would have denied (shadowDenied) under --shadow', async () => {
  const { url, cli } = await startGateway(['--limit', '2/1m', '--shadow']);
  expect(await outcomesOf(url, '/', 4, () => {})).toEqual(forwarded(4));
  const rule = ['sliding-window-2-per-1m'];
  expect(await shadowDeniedLogged(cli, 4)).toEqual([undefined, undefined, rule, rule]);
  const lines = cli.logs.filter((line) => line.event === 'request');
  // The decision itself is the enforced one: allowed, nothing enforced denied.
  expect(lines.map((line) => line.allowed)).toEqual([true, true, true, true]);
  expect(Object.keys(lines[0] ?? {})).not.toContain('shadowDenied');
});

it('regression: under --shadow the Envoy rate limit service counts a would-be denial as shadow_over_limit, and answers OK', async () => {
  const rls = join(dir, 'rls');
  await mkdir(rls);
  await writeFile(
    join(rls, 'api.yaml'),
    'domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: day, requests_per_unit: 1 }\n',
  );
  const { admin } = await startGateway([
    '--limit',
    '2/1m',
    '--shadow',
    '--grpc-port',
    '0',
    '--grpc-config',
    rls,
  ]);
  const ask = async () => {
    const response = await fetch(`${admin}/json`, {
      method: 'POST',
      body: JSON.stringify({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'u1' }] }] }),
    });
    return [response.status, ((await response.json()) as { overallCode: string }).overallCode];
  };
  expect([await ask(), await ask()]).toEqual([
    [200, 'OK'],
    [200, 'OK'],
  ]);
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  const outcome = (name: string) =>
    metric(metrics, 'floodgate_rls_decisions_total', { domain: 'api', descriptor: 'user', outcome: name });
  expect([outcome('ok'), outcome('shadow_over_limit'), outcome('over_limit')]).toEqual([1, 1, 0]);
});

it('--shadow makes every rule a shadow rule: nothing is denied, every would-be denial is counted', async () => {
  const { url, admin } = await startGateway(['--limit', '2/1m', '--shadow']);
  // Nothing is enforced, so nothing is announced.
  const outcomes = await outcomesOf(url, '/', 4, (response) =>
    expect(response.headers.get('ratelimit-limit')).toBeNull(),
  );
  expect(outcomes).toEqual(forwarded(4));
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  expect(metric(metrics, 'floodgate_shadow_denied_total', { route: 'default' })).toBe(2);
  expect(metric(metrics, 'floodgate_decisions_total', { outcome: 'denied' })).toBe(0);
});

it("a route's shadow: true makes its own rules shadow rules; the plan's rules still apply", async () => {
  const config = join(dir, 'route.yaml');
  await writeFile(
    config,
    'rules: [3/1m]\nroutes:\n  - { name: beta, path: /beta, limit: 1/1m, shadow: true }\n',
  );
  const { url, admin } = await startGateway(['--config', config]);
  expect(await outcomesOf(url, '/beta', 4, () => {})).toEqual([...forwarded(3), 'limited']);
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  expect(metric(metrics, 'floodgate_shadow_denied_total', { route: 'beta' })).toBe(3);
});

it('blockedStatus: 403 answers a key blocked by a rule with a block with 403 problem+json until the block ends', async () => {
  const config = join(dir, 'blocked.yaml');
  await writeFile(config, 'blockedStatus: 403\nrules:\n  - { name: login, limit: 1/1m, block: 10m }\n');
  const { url } = await startGateway(['--config', config]);
  expect((await fetch(url)).status).not.toBe(429);
  for (let i = 0; i < 2; i++) {
    const blocked = await fetch(url);
    expect(blocked.status).toBe(403);
    expect(blocked.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(590);
    expect(Number(blocked.headers.get('retry-after'))).toBeLessThanOrEqual(600);
    expect(await blocked.json()).toMatchObject({
      title: 'Forbidden',
      status: 403,
      'violated-policies': ['login'],
    });
  }
});

it("a plan's shadow: true makes its rules shadow rules; other plans are enforced", async () => {
  const config = join(dir, 'plans.yaml');
  await writeFile(
    config,
    [
      'tiers: { header: x-plan, trust: header, default: free }',
      'plans:',
      '  free: [2/1m]',
      '  beta: { rules: [{ name: trial, limit: 1/1m }], shadow: true }',
      '',
    ].join('\n'),
  );
  const { url, admin } = await startGateway(['--config', config]);
  expect(await outcomesOf(url, '/', 3, () => {}, { 'x-plan': 'beta' })).toEqual(forwarded(3));
  // Without x-plan, the default plan's enforced limit applies.
  expect(await outcomesOf(url, '/', 3, () => {})).toEqual([...forwarded(2), 'limited']);
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  expect(metric(metrics, 'floodgate_shadow_denied_total', { plan: 'beta', rule: 'beta.trial' })).toBe(2);
});
