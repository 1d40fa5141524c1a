/**
 * `floodgate serve --grpc-port --grpc-config` as Envoy uses it: real gateway processes on a real
 * Redis, called by a gRPC client built from the shipped .proto files. The configs and requests
 * are envoyproxy/ratelimit's documented examples; counts are exact. Limits per day keep the
 * fixed windows still while a test runs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, scriptCalls, startRedisServer } from '../support/redis-server.js';
import { type RunningCli, runCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';
import { type Descriptor, type RlsAnswer, type RlsClient, rlsClient } from './support/rls-client.js';

interface Gateway {
  cli: RunningCli;
  admin: string;
  rls: RlsClient;
}

const FILES: Record<string, string> = {
  // README "Example 3": nested descriptors, a key without a value counts per value.
  'messaging.yaml': `
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`,
  // README "Example 2": a default per address, and one address refused outright.
  'edge.yml': `
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: day
      requests_per_unit: 10
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`,
  // Unlimited, shadow mode, replaces, hits_addend, detailed_metric.
  'internal.yaml': `
domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true
  - key: azure
    rate_limit:
      unit: day
      requests_per_unit: 10
  - key: trial
    shadow_mode: true
    rate_limit:
      unit: day
      requests_per_unit: 1
  - key: generic
    rate_limit:
      name: generic
      unit: day
      requests_per_unit: 1
  - key: premium
    rate_limit:
      unit: day
      requests_per_unit: 5
      replaces:
        - name: generic
  - key: user
    detailed_metric: true
    rate_limit:
      unit: day
      requests_per_unit: 3
  - key: weekly
    rate_limit:
      unit: week
      requests_per_unit: 2
`,
  // Floodgate's extension: a request over any limit takes from none.
  'strict.yaml': `
domain: strict
all_or_nothing: true
descriptors:
  - key: user
    rate_limit:
      unit: day
      requests_per_unit: 2
  - key: org
    rate_limit:
      unit: day
      requests_per_unit: 5
`,
  'shared.yaml': `
domain: shared
descriptors:
  - key: tenant
    rate_limit:
      unit: day
      requests_per_unit: 10
`,
};

let redis: RedisServer;
let dir: string;
let a: Gateway;
const started: Gateway[] = [];

/** A gateway with --grpc-port and --grpc-config, or with `grpc:` in a config file. */
async function startGateway(grpcArgs?: string[]): Promise<Gateway> {
  const adminPort = String(await freePort());
  const cli = startCli([
    'serve',
    '--port',
    '0',
    '--admin-port',
    adminPort,
    '--redis',
    redis.url,
    ...(grpcArgs ?? ['--grpc-port', '0', '--grpc-config', dir]),
  ]);
  const listening = await cli.waitForLog((line) => line.event === 'listening', 45_000);
  const gateway = { cli, admin: listening.admin as string, rls: rlsClient(listening.grpc as string) };
  started.push(gateway);
  return gateway;
}

const entry = (key: string, value: string) => ({ key, value });
const descriptor = (...pairs: [string, string][]): Descriptor => ({
  entries: pairs.map(([key, value]) => entry(key, value)),
});

async function ask(gateway: Gateway, domain: string, descriptors: Descriptor[], hitsAddend?: number) {
  const answer = await gateway.rls.shouldRateLimit({
    domain,
    descriptors,
    ...(hitsAddend !== undefined ? { hitsAddend } : {}),
  });
  if ('error' in answer) throw new Error(`gRPC error ${answer.error}: ${answer.details}`);
  return answer as RlsAnswer;
}

function metric(text: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith('floodgate_rls_decisions_total{')) continue;
    if (Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`))) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return 0;
}

beforeAll(async () => {
  [redis, dir] = await Promise.all([startRedisServer(), mkdtemp(join(tmpdir(), 'floodgate-envoy-'))]);
  for (const [name, text] of Object.entries(FILES)) await writeFile(join(dir, name), text);
  // The gateway's own config file sits outside the rate limit config directory.
  const config = `${dir}-gateway.json`;
  await writeFile(config, JSON.stringify({ grpc: { port: 0, config: dir, headers: 'draft-6' } }));
  a = await startGateway(['--config', config]);
});

afterAll(async () => {
  for (const gateway of started) {
    gateway.rls.close();
    gateway.cli.kill();
  }
  await Promise.all(started.map((gateway) => gateway.cli.exited));
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (dir) await rm(`${dir}-gateway.json`, { force: true });
});

describe('floodgate serve: Envoy rate limit service (gRPC) on Redis', () => {
  it('nested descriptors: 5 marketing messages a day to a number, 100 messages a day to it; each descriptor counts on its own', async () => {
    const both = [
      descriptor(['message_type', 'marketing'], ['to_number', '2061234567']),
      descriptor(['to_number', '2061234567']),
    ];
    for (let i = 1; i <= 5; i++) {
      const answer = await ask(a, 'messaging', both);
      expect(answer.overallCode).toBe('OK');
      expect(answer.statuses.map((status) => [status.code, status.limitRemaining])).toEqual([
        ['OK', 5 - i],
        ['OK', 100 - i],
      ]);
    }
    const sixth = await ask(a, 'messaging', both);
    expect(sixth.overallCode).toBe('OVER_LIMIT');
    expect(sixth.statuses[0]).toMatchObject({
      code: 'OVER_LIMIT',
      currentLimit: { requestsPerUnit: 5, unit: 'DAY' },
      limitRemaining: 0,
    });
    // Envoy's semantics: the other descriptor still counted the request.
    expect(sixth.statuses[1]).toMatchObject({ code: 'OK', limitRemaining: 94 });
    const reset = sixth.statuses[0]?.durationUntilReset;
    expect(reset?.seconds).toBeGreaterThan(0);
    expect(reset?.seconds).toBeLessThanOrEqual(86_400);
    // grpc.headers: draft-6 headers of the most restrictive descriptor, for Envoy to add.
    expect(sixth.responseHeadersToAdd).toEqual([
      { key: 'RateLimit-Limit', value: '5' },
      { key: 'RateLimit-Remaining', value: '0' },
      {
        key: 'RateLimit-Reset',
        value: String(Math.ceil(((reset?.seconds ?? 0) * 1e9 + (reset?.nanos ?? 0)) / 1e9)),
      },
      { key: 'RateLimit-Policy', value: '5;w=86400' },
    ]);
    // Another number has its own counts.
    const other = await ask(a, 'messaging', [
      descriptor(['message_type', 'marketing'], ['to_number', '2069999999']),
    ]);
    expect(other.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 4 });
  });

  it("a week is envoyproxy/ratelimit's: 7 days from the epoch, answered as Envoy's WEEK unit", async () => {
    const asked = [descriptor(['weekly', 'w-1'])];
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await ask(a, 'internal', asked)).statuses[0]);
    expect(statuses.map((status) => [status?.code, status?.limitRemaining])).toEqual([
      ['OK', 1],
      ['OK', 0],
      ['OVER_LIMIT', 0],
    ]);
    expect(statuses[2]?.currentLimit).toMatchObject({ requestsPerUnit: 2, unit: 'WEEK' });
    // The window's end as the server's clock places it; the test's clock agrees within seconds.
    const week = 7 * 86_400;
    const untilEnd = week - (Math.floor(Date.now() / 1000) % week);
    expect(Math.abs((statuses[2]?.durationUntilReset?.seconds ?? 0) - untilEnd)).toBeLessThanOrEqual(5);
  });

  it('decides every descriptor of a request in one script call', async () => {
    const client = new Redis(redis.url);
    try {
      const before = await scriptCalls(client);
      const answer = await ask(a, 'internal', [
        descriptor(['user', 'one-call-1']),
        descriptor(['user', 'one-call-2']),
        descriptor(['azure', 'one-call-3']),
      ]);
      expect(answer.statuses.map((status) => status.limitRemaining)).toEqual([2, 2, 9]);
      expect((await scriptCalls(client)) - before).toBe(1);
    } finally {
      client.disconnect();
    }
  });

  it('a key without a value limits each value; a listed value with 0 is refused outright', async () => {
    const first = await ask(a, 'edge_proxy_per_ip', [descriptor(['remote_address', '10.0.0.1'])]);
    expect(first.statuses[0]).toMatchObject({
      code: 'OK',
      currentLimit: { requestsPerUnit: 10, unit: 'DAY' },
      limitRemaining: 9,
    });
    const blocked = await ask(a, 'edge_proxy_per_ip', [descriptor(['remote_address', '50.0.0.5'])]);
    expect(blocked.overallCode).toBe('OVER_LIMIT');
    expect(blocked.statuses[0]).toMatchObject({
      code: 'OVER_LIMIT',
      currentLimit: { requestsPerUnit: 0, unit: 'SECOND' },
      limitRemaining: 0,
    });
  });

  it('unlimited, unmatched and unknown-domain descriptors are OK; shadow_mode reports OK past the limit', async () => {
    const answer = await ask(a, 'internal', [descriptor(['ldap', 'x']), descriptor(['unconfigured', 'y'])]);
    expect(answer.overallCode).toBe('OK');
    expect(answer.statuses[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 4_294_967_295,
      currentLimit: null,
    });
    expect(answer.statuses[1]).toMatchObject({ code: 'OK', limitRemaining: 0, currentLimit: null });
    expect((await ask(a, 'nowhere', [descriptor(['a', 'b'])])).overallCode).toBe('OK');

    expect((await ask(a, 'internal', [descriptor(['trial', 't1'])])).statuses[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 0,
    });
    const past = await ask(a, 'internal', [descriptor(['trial', 't1'])]);
    expect(past.overallCode).toBe('OK');
    expect(past.statuses[0]).toMatchObject({
      code: 'OK',
      currentLimit: { requestsPerUnit: 1, unit: 'DAY' },
      limitRemaining: 0,
    });
  });

  it('hits_addend: the request’s is the cost, a descriptor’s own overrides it, 0 only looks; a denied request takes nothing', async () => {
    const azure = descriptor(['azure', 'tenant-1']);
    expect((await ask(a, 'internal', [azure], 3)).statuses[0]?.limitRemaining).toBe(7);
    expect(
      (await ask(a, 'internal', [{ ...azure, hitsAddend: { value: 5 } }], 3)).statuses[0]?.limitRemaining,
    ).toBe(2);
    const denied = await ask(a, 'internal', [azure], 3);
    expect(denied.statuses[0]).toMatchObject({ code: 'OVER_LIMIT', limitRemaining: 2 });
    expect((await ask(a, 'internal', [{ ...azure, hitsAddend: { value: 0 } }])).statuses[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 2,
    });
    expect((await ask(a, 'internal', [azure], 2)).statuses[0]).toMatchObject({
      code: 'OK',
      limitRemaining: 0,
    });
  });

  it('all_or_nothing (a Floodgate extension): a request over one limit takes nothing from the others', async () => {
    const both = [descriptor(['user', 'u1']), descriptor(['org', 'o1'])];
    expect((await ask(a, 'strict', both)).statuses.map((status) => status.limitRemaining)).toEqual([1, 4]);
    expect((await ask(a, 'strict', both)).statuses.map((status) => status.limitRemaining)).toEqual([0, 3]);
    const over = await ask(a, 'strict', both);
    expect(over.overallCode).toBe('OVER_LIMIT');
    expect(over.statuses.map((status) => [status.code, status.limitRemaining])).toEqual([
      ['OVER_LIMIT', 0],
      ['OK', 3],
    ]);
    // The org's count was given back: another user of it still has 3.
    expect((await ask(a, 'strict', [descriptor(['org', 'o1'])])).statuses[0]?.limitRemaining).toBe(2);
  });

  it('replaces: a limit named by another matched limit does not apply', async () => {
    for (let i = 1; i <= 3; i++) {
      const answer = await ask(a, 'internal', [descriptor(['generic', 'g']), descriptor(['premium', 'p'])]);
      expect(answer.overallCode).toBe('OK');
      expect(answer.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 0, currentLimit: null });
      expect(answer.statuses[1]).toMatchObject({ code: 'OK', limitRemaining: 5 - i });
    }
    // Alone, the generic limit applies: 1 a day.
    expect((await ask(a, 'internal', [descriptor(['generic', 'g'])])).statuses[0]?.limitRemaining).toBe(0);
    expect((await ask(a, 'internal', [descriptor(['generic', 'g'])])).overallCode).toBe('OVER_LIMIT');
  });

  it('answers a malformed request with INVALID_ARGUMENT naming the field, and keeps serving', async () => {
    const INVALID_ARGUMENT = 3;
    const long = 'x'.repeat(1025);
    const cases: [Parameters<RlsClient['shouldRateLimit']>[0], string][] = [
      [{ domain: '', descriptors: [descriptor(['a', 'b'])] }, 'domain'],
      [{ domain: 'internal', descriptors: [] }, 'descriptors'],
      [{ domain: 'internal', descriptors: [{ entries: [] }] }, 'descriptors[0].entries'],
      [{ domain: 'internal', descriptors: [descriptor(['azure', ''])] }, 'descriptors[0].entries[0].value'],
      [{ domain: 'internal', descriptors: [descriptor(['azure', long])] }, 'descriptors[0].entries[0].value'],
      [
        { domain: 'internal', descriptors: Array.from({ length: 65 }, () => descriptor(['a', 'b'])) },
        'descriptors',
      ],
      [
        { domain: 'internal', descriptors: [descriptor(['azure', 'a'])], hitsAddend: 2_000_000_000 },
        'hits_addend',
      ],
      [
        {
          domain: 'internal',
          descriptors: [{ ...descriptor(['azure', 'a']), limit: { requestsPerUnit: 1, unit: 'SECOND' } }],
        },
        'descriptors[0].limit',
      ],
    ];
    for (const [request, field] of cases) {
      const answer = await a.rls.shouldRateLimit(request);
      expect(answer, field).toMatchObject({ error: INVALID_ARGUMENT });
      expect(
        (answer as { details: string }).details.startsWith(`${field}:`),
        (answer as { details: string }).details,
      ).toBe(true);
    }
    // Bytes that are no RateLimitRequest: refused by the gRPC layer, the process lives on.
    expect(await a.rls.raw(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))).not.toBe('answered');
    // Values with braces, spaces and non-ASCII characters are keys like any other.
    const odd = descriptor(['user', '{a} b\u00e9\u0000'.repeat(40)]);
    expect((await ask(a, 'internal', [odd])).statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 2 });
    expect(a.cli.process.exitCode).toBeNull();
  });

  it('POST /json on the admin listener answers as the reference service: 200, 429 when over the limit, 400 when malformed', async () => {
    const post = (body: string) => fetch(`${a.admin}/json`, { method: 'POST', body });
    const request = {
      domain: 'edge_proxy_per_ip',
      descriptors: [{ entries: [{ key: 'remote_address', value: '10.9.9.9' }] }],
    };
    const ok = await post(JSON.stringify(request));
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { overallCode: string; statuses: { durationUntilReset: string }[] };
    expect(body).toMatchObject({
      overallCode: 'OK',
      statuses: [{ code: 'OK', currentLimit: { requestsPerUnit: 10, unit: 'DAY' }, limitRemaining: 9 }],
    });
    expect(body.statuses[0]?.durationUntilReset).toMatch(/^\d+(\.\d+)?s$/);
    const snake = await post(JSON.stringify({ ...request, hits_addend: 9 }));
    expect(((await snake.json()) as RlsAnswer).statuses[0]?.limitRemaining).toBe(0);
    expect((await post(JSON.stringify(request))).status).toBe(429);
    const malformed = await post('{"domain": ');
    expect(malformed.status).toBe(400);
    const invalid = await post(JSON.stringify({ domain: 'x', descriptors: [{ entries: [{ key: 'a' }] }] }));
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({
      error: 'descriptors[0].entries[0].value: expected a non-empty string, got undefined',
    });
  });

  it('/metrics counts decisions per domain, configured descriptor and outcome', async () => {
    const text = await (await fetch(`${a.admin}/metrics`)).text();
    expect(
      metric(text, { domain: 'messaging', descriptor: 'message_type_marketing.to_number', outcome: 'ok' }),
    ).toBe(6);
    expect(
      metric(text, {
        domain: 'messaging',
        descriptor: 'message_type_marketing.to_number',
        outcome: 'over_limit',
      }),
    ).toBe(1);
    expect(metric(text, { domain: 'messaging', descriptor: 'to_number', outcome: 'ok' })).toBe(6);
    expect(metric(text, { domain: 'internal', descriptor: 'trial', outcome: 'shadow_over_limit' })).toBe(1);
    expect(metric(text, { domain: 'internal', descriptor: 'ldap', outcome: 'unlimited' })).toBe(1);
    // detailed_metric: the request's value is part of the label, as printable ASCII, cut at 64.
    const label = `user_${'{a} b__'.repeat(10).slice(0, 64)}`;
    expect(metric(text, { domain: 'internal', descriptor: label, outcome: 'ok' })).toBe(1);
    // An unknown domain is not a label of its own (clients choose it).
    expect(metric(text, { domain: 'unknown', descriptor: 'none', outcome: 'no_limit' })).toBe(1);
    expect(text).not.toContain('domain="nowhere"');
  });

  it('serve --check reads the rate limit config as start does; a bad one exits 2 with one line naming it', async () => {
    const ok = await runCli(['serve', '--check', '--grpc-config', dir]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(
      `grpc        127.0.0.1:8081, Envoy rate limit service, ${Object.keys(FILES).length} domain(s) from ${dir}`,
    );
    const missing = await runCli(['serve', '--check', '--grpc-config', join(dir, 'nothing.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe(
      `floodgate serve: --grpc-config: cannot read ${join(dir, 'nothing.yaml')}: no such file (see 'floodgate serve --help')`,
    );
    const noConfig = await runCli(['serve', '--check', '--grpc-port', '9000']);
    expect(noConfig.code).toBe(2);
    expect(noConfig.stderr).toContain('--grpc-port: the Envoy rate limit service needs its limits');
  });

  it('four gateway processes on one Redis share each descriptor’s count exactly', async () => {
    const more = await Promise.all([startGateway(), startGateway(), startGateway()]);
    const gateways = [a, ...more];
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        ask(gateways[i % 4] as Gateway, 'shared', [descriptor(['tenant', 'acme'])]),
      ),
    );
    expect(answers.filter((answer) => answer.overallCode === 'OK')).toHaveLength(10);
    expect(answers.filter((answer) => answer.overallCode === 'OVER_LIMIT')).toHaveLength(14);
    const remaining = answers
      .filter((answer) => answer.overallCode === 'OK')
      .map((answer) => answer.statuses[0]?.limitRemaining)
      .sort((x, y) => (x as number) - (y as number));
    expect(remaining).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  }, 60_000); // three more processes to start, which a loaded machine takes its time over

  it('reloads the YAML on SIGHUP, keeping the counts; a broken file keeps the running config', async () => {
    const tenant = [descriptor(['tenant', 'reloaded'])];
    expect((await ask(a, 'shared', tenant, 8)).statuses[0]?.limitRemaining).toBe(2);
    await writeFile(
      join(dir, 'shared.yaml'),
      FILES['shared.yaml']?.replace('requests_per_unit: 10', 'requests_per_unit: 20') as string,
    );
    a.cli.process.kill('SIGHUP');
    await a.cli.waitForLog((line) => line.event === 'reloaded');
    expect((await ask(a, 'shared', tenant)).statuses[0]).toMatchObject({
      currentLimit: { requestsPerUnit: 20 },
      limitRemaining: 11,
    });
    await writeFile(
      join(dir, 'shared.yaml'),
      'domain: shared\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: fortnight }\n',
    );
    a.cli.process.kill('SIGHUP');
    const failed = await a.cli.waitForLog((line) => line.event === 'reload_failed');
    expect(failed.error).toContain(
      `descriptors[0].rate_limit.unit: "fortnight" is not one of 'SECOND', 'MINUTE'`,
    );
    expect((await ask(a, 'shared', tenant)).statuses[0]?.limitRemaining).toBe(10);
  });

  it('quota_lease (a Floodgate extension): a hot descriptor is answered from slices of its quota, never above its limit; --shadow refuses it', async () => {
    // A store deadline no loaded machine reaches: a take that timed out would lose its slice.
    const rls = await mkdtemp(join(tmpdir(), 'floodgate-envoy-lease-'));
    await writeFile(
      join(rls, 'hot.yaml'),
      'domain: hot\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: day, requests_per_unit: 40, quota_lease: { max: 10 } }\n',
    );
    const config = `${rls}.json`;
    await writeFile(config, JSON.stringify({ store: { timeout: '10s' }, grpc: { port: 0, config: rls } }));
    try {
      const gateway = await startGateway(['--config', config]);
      const tenant = [descriptor(['tenant', 'acme'])];
      // 60 calls at once make the key hot (8 checks within 100 ms), so the gateway takes slices.
      const underLoad = await Promise.all(Array.from({ length: 60 }, () => ask(gateway, 'hot', tenant)));
      let admitted = underLoad.filter((answer) => answer.overallCode === 'OK').length;
      expect(admitted).toBeLessThanOrEqual(40);
      // Units left in a slice go back once the key is idle (100 ms); then one call at a time.
      await sleep(500);
      for (let i = 0; i < 40; i++) {
        if ((await ask(gateway, 'hot', tenant)).overallCode !== 'OK') break;
        admitted++;
      }
      expect(admitted).toBe(40);
      const text = await (await fetch(`${gateway.admin}/metrics`)).text();
      const takes = /floodgate_store_latency_seconds_count\{store="redis",operation="lease"\} (\d+)/.exec(
        text,
      );
      expect(Number(takes?.[1] ?? 0)).toBeGreaterThan(0);

      const shadowed = await runCli(['serve', '--check', '--shadow', '--grpc-config', rls]);
      expect(shadowed.code).toBe(2);
      expect(shadowed.stderr.trim()).toBe(
        `floodgate serve: --shadow: not allowed with quotaLease on Envoy rate limits (quota_lease in ${rls}): slices are admitted locally, where a shadow rule cannot report its would-be denials (see 'floodgate serve --help')`,
      );
    } finally {
      await rm(config, { force: true });
      await rm(rls, { recursive: true, force: true });
    }
  }, 90_000);

  it('a call under way across a reload is answered whole by its generation, which closes only after it', async () => {
    // A store deadline longer than Redis is held up below: the call's checks wait, not fail open.
    // Its own rate limit config: the test above leaves a broken file in the shared one.
    const rls = await mkdtemp(join(tmpdir(), 'floodgate-envoy-reload-'));
    await writeFile(join(rls, 'strict.yaml'), FILES['strict.yaml'] as string);
    const config = `${rls}.json`;
    await writeFile(config, JSON.stringify({ store: { timeout: '30s' }, grpc: { port: 0, config: rls } }));
    const gateway = await startGateway(['--config', config]);
    const client = new Redis(redis.url);
    const both = [descriptor(['user', 'across-reload']), descriptor(['org', 'across-reload'])];
    try {
      await ask(gateway, 'strict', both);
      await ask(gateway, 'strict', both);
      // The user is full: the next call's org check is given back (all_or_nothing) after its checks.
      await client.client('PAUSE', 30_000, 'WRITE');
      let pending: Promise<RlsAnswer> | undefined;
      try {
        pending = ask(gateway, 'strict', both);
        const deadline = Date.now() + 20_000;
        while (!/blocked_clients:[1-9]/.test(await client.info('clients'))) {
          if (Date.now() > deadline) throw new Error('the call never reached Redis');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        gateway.cli.process.kill('SIGHUP');
        await gateway.cli.waitForLog((line) => line.event === 'reloaded', 20_000);
      } finally {
        await client.client('UNPAUSE');
      }
      const over = await pending;
      expect(over.statuses.map((status) => [status.code, status.limitRemaining])).toEqual([
        ['OVER_LIMIT', 0],
        ['OK', 3],
      ]);
      expect(
        (await ask(gateway, 'strict', [descriptor(['org', 'across-reload'])])).statuses[0],
      ).toMatchObject({
        limitRemaining: 2,
      });
      expect(gateway.cli.logs.filter((line) => line.event === 'rls_error')).toEqual([]);
    } finally {
      client.disconnect();
      await rm(config, { force: true });
      await rm(rls, { recursive: true, force: true });
    }
  }, 90_000);

  it('gRPC health: SERVING while Redis answers, NOT_SERVING while it does not (and checks follow onStoreError); unknown services are NOT_FOUND', async () => {
    expect(await a.rls.health('')).toBe('SERVING');
    expect(await a.rls.health('envoy.service.ratelimit.v3.RateLimitService')).toBe('SERVING');
    expect(await a.rls.health('some.other.Service')).toEqual({ error: 5 });
    redis.process.kill('SIGSTOP');
    try {
      expect(await a.rls.health('')).toBe('NOT_SERVING');
      // onStoreError (default open): allowed after the store timeout, and counted as degraded.
      const degraded = await ask(a, 'shared', [descriptor(['tenant', 'during-outage'])]);
      expect(degraded.overallCode).toBe('OK');
      const text = await (await fetch(`${a.admin}/metrics`)).text();
      expect(text).toMatch(/floodgate_degraded_decisions_total\{reason="timeout"\} [1-9]/);
    } finally {
      redis.process.kill('SIGCONT');
    }
    expect(await a.rls.health('')).toBe('SERVING');
  });
});
