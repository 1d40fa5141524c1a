/**
 * The gateway's configuration: one validation pass, and every error names the field it
 * rejects. In-process (pure functions), so every bad case gets its own assertion cheaply.
 */
import { describe, expect, it } from 'vitest';
import { parseRate } from '../../src/cli/args.js';
import { loadConfig } from '../../src/cli/config/load.js';
import { parseGatewayConfig, sha256Hex } from '../../src/cli/config/schema.js';
import { describeConfig } from '../../src/cli/serve/describe.js';
import { createLimiter, memoryStore, type RuleOptions } from '../../src/index.js';

function error(config: unknown): string {
  try {
    parseGatewayConfig(config);
  } catch (caught) {
    return (caught as Error).message;
  }
  throw new Error('expected the config to be rejected');
}

describe('gateway config', () => {
  it('defaults to one plan of 60 per minute, sliding window, memory store, draft-6 headers', () => {
    const config = parseGatewayConfig({});
    expect([...config.plans]).toEqual([
      ['default', [{ algorithm: 'sliding-window', limit: 60, window: 60_000 }]],
    ]);
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      upstream: undefined,
      redis: undefined,
      prefix: 'floodgate',
      storeTimeoutMs: 100,
      onStoreError: 'open',
      headers: 'draft-6',
      blockedStatus: 429,
      apiKeyHeader: 'x-api-key',
      admin: { host: '127.0.0.1', port: 9477 },
      tiers: undefined,
      routes: [],
      shutdownTimeoutMs: 10_000,
    });
  });

  it('reads rule shorthands and full rule objects', () => {
    const config = parseGatewayConfig({
      rules: ['10/s', { name: 'hourly', limit: 5000, window: '1h', algorithm: 'gcra', burst: 50 }],
    });
    expect(config.plans.get('default')).toEqual([
      { algorithm: 'sliding-window', limit: 10, window: 1000 },
      { name: 'hourly', algorithm: 'gcra', limit: 5000, window: '1h', burst: 50 },
    ]);
    expect(parseRate('120/1m', 'x')).toEqual({ limit: 120, windowMs: 60_000 });
    expect(parseRate('7 / 500ms', 'x')).toEqual({ limit: 7, windowMs: 500 });
  });

  it('reads counts: requests | cost on rules and concurrency rules, and names the field when it is neither', () => {
    const config = parseGatewayConfig({
      rules: [
        { name: 'rpm', limit: '60/1m', counts: 'requests' },
        { name: 'tpm', limit: '90000/1m', counts: 'cost' },
        { name: 'inflight', algorithm: 'concurrency', limit: 4, counts: 'requests' },
      ],
    });
    expect(config.plans.get('default')).toEqual([
      { name: 'rpm', algorithm: 'sliding-window', limit: 60, window: 60_000, counts: 'requests' },
      { name: 'tpm', algorithm: 'sliding-window', limit: 90_000, window: 60_000, counts: 'cost' },
      { name: 'inflight', algorithm: 'concurrency', limit: 4, counts: 'requests' },
    ]);
    expect(describeConfig(config)).toContain(
      'plan default: rpm: sliding-window 60/1m counts requests; tpm: sliding-window 90000/1m; inflight: concurrency 4 counts requests',
    );
    expect(error({ rules: [{ limit: '60/1m', counts: 'tokens' }] })).toBe(
      "rules[0].counts: \"tokens\" is not one of 'requests', 'cost'",
    );
    expect(error({ routes: [{ path: '/chat', rules: [{ limit: '5/1s', counts: true }] }] })).toBe(
      "routes[0].rules[0].counts: true is not one of 'requests', 'cost'",
    );
    expect(error({ rules: [{ algorithm: 'concurrency', limit: 4, counts: 'request' }] })).toBe(
      "rules[0].counts: \"request\" is not one of 'requests', 'cost'",
    );
  });

  it("makes a shadow route's concurrency a shadow rule too, as a shadow plan's", () => {
    const config = parseGatewayConfig({
      routes: [{ path: '/trial', inherit: false, limit: '10/1s', concurrency: { limit: 2 }, shadow: true }],
    });
    const rules = config.routes[0]?.rules.get('default') as RuleOptions[];
    expect(rules.map((rule) => [rule.algorithm ?? 'sliding-window', rule.shadow])).toEqual([
      ['sliding-window', true],
      ['concurrency', true],
    ]);
  });

  it('keeps block and shadow on concurrency rules, where they take effect, and names them in errors', async () => {
    const config = parseGatewayConfig({
      routes: [
        {
          path: '/watched',
          inherit: false,
          rules: ['10/1s', { name: 'watched', algorithm: 'concurrency', limit: 1, shadow: true }],
        },
        {
          path: '/strict',
          inherit: false,
          rules: [
            { name: 'strict', algorithm: 'concurrency', limit: 1, block: { duration: '1m', factor: 2 } },
          ],
        },
      ],
    });
    const [watched, strict] = config.routes.map((route) => route.rules.get('default') as RuleOptions[]);
    expect(watched?.[1]).toEqual({ name: 'watched', algorithm: 'concurrency', limit: 1, shadow: true });
    expect(strict).toEqual([
      { name: 'strict', algorithm: 'concurrency', limit: 1, block: { duration: '1m', factor: 2 } },
    ]);

    // The shadow rule would deny a second request in flight, and lets it through naming itself.
    const shadowed = createLimiter({ store: memoryStore(), rules: watched as RuleOptions[] });
    const first = await shadowed.check('k');
    const second = await shadowed.check('k');
    expect([first.allowed, second.allowed, second.shadowDenied]).toEqual([true, true, ['watched']]);
    // The block outlives the slot: once denied, the key stays denied after the holder releases.
    const blocking = createLimiter({ store: memoryStore(), rules: strict as RuleOptions[] });
    const held = await blocking.check('k');
    expect((await blocking.check('k')).blocked).toBe(true);
    await blocking.release(held);
    const after = await blocking.check('k');
    expect([after.allowed, after.blocked]).toEqual([false, true]);
    await Promise.all([shadowed.close(), blocking.close()]);

    const slot = (more: Record<string, unknown>) => ({
      routes: [{ path: '/x', rules: ['1/1s', { algorithm: 'concurrency', limit: 2, ...more }] }],
    });
    expect(error(slot({ shadow: 'yes' }))).toBe('routes[0].rules[1].shadow: "yes" must be true or false');
    expect(error(slot({ block: 'soon' }))).toMatch(
      /^routes\[0\]\.rules\[1\]\.block: "soon" is not a duration; /,
    );
    expect(error(slot({ block: { duration: '1m', factor: 0 } }))).toBe(
      'routes[0].rules[1].block.factor: 0 must be a number from 1 to 1000',
    );
    expect(error({ concurrency: { limit: 2, block: '1m' } })).toBe(
      'concurrency.block: unknown field; expected one of limit, lease, counts',
    );
  });

  it('regression: serve --check hides the password of an upstream URL, as it does a Redis one', () => {
    const config = parseGatewayConfig({
      upstream: 'http://svc:s3cret@api.internal:8443/base',
      store: { redis: 'redis://app:hunter2@127.0.0.1:6379' },
    });
    const text = describeConfig(config);
    expect(text).toContain('http://svc:***@api.internal:8443/base');
    expect(text).toContain('redis://app:***@127.0.0.1:6379');
    expect(text).not.toMatch(/s3cret|hunter2/);
  });

  it("regression: serve --check lists rules' block, shadow and quotaLease, the client timeout and concurrency, and how denials are answered", () => {
    const config = parseGatewayConfig({
      upstream: 'http://127.0.0.1:3000',
      upstreamTimeout: '5s',
      clientTimeout: '10s',
      clientConcurrency: 8,
      blockedStatus: 403,
      rules: [
        { name: 'login', limit: '5/15m', algorithm: 'fixed-window', block: '15m' },
        {
          name: 'escalating',
          limit: '10/1m',
          block: { duration: '1m', factor: 2, max: '1h', forgetAfter: '1d' },
        },
        { name: 'trial', limit: '3/1m', shadow: true },
      ],
      routes: [
        {
          name: 'feed',
          path: '/feed',
          inherit: false,
          rules: [{ name: 'feed', limit: '50000/1s', algorithm: 'fixed-window', quotaLease: { max: 50 } }],
        },
      ],
    });
    const lines = describeConfig(config).split('\n');
    expect(lines).toContain('upstream    http://127.0.0.1:3000/ (timeout 5s)');
    expect(lines).toContain(
      'clients     timeout 10s (headers, silence in a body), at most 8 requests in flight upstream per address',
    );
    expect(lines).toContain('denials     429, 403 while the key is blocked');
    expect(lines).toContain(
      'plan default: login: fixed-window 5/15m block 15m; escalating: sliding-window 10/1m block 1m factor 2 max 1h forgetAfter 1d; trial: sliding-window 3/1m shadow',
    );
    expect(lines).toContain('route feed: * /feed -> feed: fixed-window 50000/1s quotaLease max 50');
    expect(describeConfig(parseGatewayConfig({})).split('\n')).toEqual(
      expect.arrayContaining([
        'upstream    demo API',
        'clients     timeout 30s (headers, silence in a body), at most 64 requests in flight upstream per address',
        'denials     429',
      ]),
    );
    expect(describeConfig(parseGatewayConfig({ shadow: true, blockedStatus: 403 })).split('\n')).toContain(
      'denials     none: shadow is on (every rule evaluated and counted, never enforced)',
    );
  });

  it('reads quotaLease (true, false or { max }) on rules, and names the field and what it allows when refused', () => {
    const config = parseGatewayConfig({
      rules: [
        { name: 'global', limit: '50000/1s', algorithm: 'fixed-window', quotaLease: true },
        { name: 'daily', limit: 900, window: '1d', algorithm: 'gcra', burst: 100, quotaLease: { max: 50 } },
      ],
      routes: [{ path: '/plain', inherit: false, rules: [{ limit: '5/1s', quotaLease: false }, '9/1m'] }],
    });
    expect(config.plans.get('default')).toEqual([
      { name: 'global', algorithm: 'fixed-window', limit: 50_000, window: 1000, quotaLease: true },
      { name: 'daily', algorithm: 'gcra', limit: 900, window: '1d', burst: 100, quotaLease: { max: 50 } },
    ]);
    expect(describeConfig(config)).toContain(
      'plan default: global: fixed-window 50000/1s quotaLease; daily: gcra 900/1d burst 100 quotaLease max 50',
    );
    expect(describeConfig(config)).toContain(
      'route any-plain: * /plain -> any-plain.sliding-window-5-per-1s: sliding-window 5/1s; any-plain.sliding-window-9-per-1m: sliding-window 9/1m',
    );

    const leased = (quotaLease: unknown, more: Record<string, unknown> = {}) => ({
      routes: [{ path: '/x', inherit: false, rules: ['1/1s', { limit: '100/1s', quotaLease, ...more }] }],
    });
    expect(error(leased('yes'))).toBe('routes[0].rules[1].quotaLease: expected true or { max }, got "yes"');
    expect(error(leased([500]))).toBe(
      'routes[0].rules[1].quotaLease: expected true or { max }, got an array',
    );
    expect(error(leased({ max: 0 }))).toBe(
      'routes[0].rules[1].quotaLease.max: 0 must be an integer from 1 to 100',
    );
    // At most the rule's capacity (its burst for token-bucket and gcra).
    expect(error(leased({ max: 101 }))).toBe(
      'routes[0].rules[1].quotaLease.max: 101 must be an integer from 1 to 100',
    );
    expect(error(leased({ max: 10, min: 1 }))).toBe(
      'routes[0].rules[1].quotaLease.min: unknown option; quotaLease takes max',
    );
    const algorithms =
      "only 'fixed-window', 'sliding-window', 'token-bucket' and 'gcra' rules can lease quota";
    expect(error(leased(true, { algorithm: 'sliding-log' }))).toBe(
      `routes[0].rules[1].quotaLease: not allowed for 'sliding-log': ${algorithms}`,
    );
    expect(error({ rules: [{ algorithm: 'concurrency', limit: 3, quotaLease: true }] })).toBe(
      `rules[0].quotaLease: not allowed for 'concurrency': ${algorithms}`,
    );
    expect(error({ routes: [{ path: '/x', concurrency: { limit: 3, quotaLease: true } }] })).toBe(
      'routes[0].concurrency.quotaLease: unknown field; expected one of limit, lease, counts',
    );
    expect(error(leased(true, { block: '1m' }))).toBe(
      'routes[0].rules[1].quotaLease: not allowed with block: slices are admitted locally, where a block cannot start',
    );
    expect(error(leased(true, { counts: 'requests' }))).toMatch(
      /^routes\[0\]\.rules\[1\]\.quotaLease: not allowed with counts: 'requests': /,
    );
    const shadowed = 'slices are admitted locally, where a shadow rule cannot report its would-be denials';
    expect(error(leased(true, { shadow: true }))).toBe(
      `routes[0].rules[1].quotaLease: not allowed with shadow: ${shadowed}`,
    );
    const alone = { path: '/x', inherit: false, rules: [{ limit: '100/1s', quotaLease: true }] };
    expect(error({ routes: [{ ...alone, shadow: true }] })).toBe(
      `routes[0].shadow: not allowed with quotaLease on the route's own rules: ${shadowed}`,
    );
    expect(error({ routes: [alone], shadow: true })).toBe(
      `shadow: not allowed with quotaLease on some rules (every rule becomes a shadow rule): ${shadowed}`,
    );
    expect(() => parseGatewayConfig({ routes: [alone], shadow: true }, { shadow: '--shadow' })).toThrow(
      /^--shadow: not allowed with quotaLease/,
    );
    const tiers = { header: 'x-plan', default: 'free', trust: 'header' };
    expect(
      error({ tiers, plans: { free: { rules: [{ limit: '100/1s', quotaLease: true }], shadow: true } } }),
    ).toBe(`plans.free.shadow: not allowed with quotaLease on the plan's rules: ${shadowed}`);

    // A request's rules lease all or none, as the limiter requires; the message says which go together.
    const mixed =
      "checked together (a route's own rules, its plan's unless inherit: false, and concurrency rules, which cannot lease); set it on all of them or on none";
    expect(error(leased(true))).toBe(`routes[0].rules: quotaLease is set on 1 of 2 rules ${mixed}`);
    expect(error({ routes: [{ ...alone, inherit: true }] })).toBe(
      `routes[0]: quotaLease is set on 1 of 2 rules ${mixed}`,
    );
    expect(error({ routes: [{ ...alone, concurrency: 4 }] })).toBe(
      `routes[0]: quotaLease is set on 1 of 2 rules ${mixed}`,
    );
    expect(error({ rules: [{ limit: '100/1s', quotaLease: true }], concurrency: 4 })).toBe(
      `concurrency: quotaLease is set on 1 of 2 rules ${mixed}`,
    );
    expect(
      error({
        tiers,
        plans: { free: [{ limit: '100/1s', quotaLease: true }], pro: ['5/1s'] },
        routes: [{ path: '/x', plans: { pro: [{ limit: '9/1s', quotaLease: true }] } }],
      }),
    ).toBe(`routes[0] (plan pro): quotaLease is set on 1 of 2 rules ${mixed}`);
  });

  it('builds per-route rule lists per plan: own rules first, then the plan’s, unless inherit is false', () => {
    const config = parseGatewayConfig({
      tiers: { header: 'X-Plan', default: 'free', trust: 'header' },
      plans: { free: ['2/1m'], pro: ['20/1m'] },
      routes: [
        { method: 'post', path: '/chat/*', cost: 5, limit: '100/1m', algorithm: 'token-bucket' },
        { name: 'exports', path: '/exports/:id', plans: { pro: ['3/1h'] }, inherit: false, rules: ['1/1h'] },
      ],
      skip: ['/assets/*', 'GET,HEAD /status'],
    });
    const [chat, exportsRoute, assets, status] = config.routes;
    expect(chat).toMatchObject({
      name: 'post-chat',
      methods: ['POST'],
      path: '/chat/*',
      cost: 5,
      skip: false,
    });
    expect(chat?.rules.get('free')).toEqual([
      { name: 'post-chat.token-bucket-100-per-1m', algorithm: 'token-bucket', limit: 100, window: 60_000 },
      { algorithm: 'sliding-window', limit: 2, window: 60_000 },
    ]);
    expect(exportsRoute?.rules.get('free')).toEqual([
      { name: 'exports.sliding-window-1-per-1h', algorithm: 'sliding-window', limit: 1, window: 3_600_000 },
    ]);
    expect(exportsRoute?.rules.get('pro')?.map((rule) => rule.name)).toEqual([
      'exports.sliding-window-1-per-1h',
      'exports.sliding-window-3-per-1h',
    ]);
    expect(assets).toMatchObject({
      where: 'skip[0]',
      path: '/assets/*',
      skip: true,
      methods: expect.arrayContaining(['GET', 'POST']),
    });
    expect(status).toMatchObject({ where: 'skip[1]', methods: ['GET', 'HEAD'], path: '/status', skip: true });
    expect(config.tiers).toEqual({ header: 'x-plan', keys: undefined, default: 'free', trust: 'header' });
  });

  it('keeps API keys of tiers only as SHA-256 digests, and accepts digests', () => {
    const digest = sha256Hex('sk_live_enterprise');
    const config = parseGatewayConfig({
      tiers: {
        header: 'x-api-key',
        keys: { sk_live_pro: 'pro', [`sha256:${digest}`]: 'enterprise' },
        default: 'free',
      },
      plans: { free: ['1/1m'], pro: ['10/1m'], enterprise: ['100/1m'] },
    });
    expect([...(config.tiers?.keys ?? [])]).toEqual([
      [sha256Hex('sk_live_pro'), 'pro'],
      [digest, 'enterprise'],
    ]);
    expect(JSON.stringify([...(config.tiers?.keys ?? [])])).not.toContain('sk_live');
  });

  it("reads a route's count and settle header, and names them in errors", () => {
    const config = parseGatewayConfig({
      routes: [
        { path: '/login', limit: '5/1m', count: 'failed' },
        { path: '/v1/chat', limit: '100000/1m', cost: 500, settle: { header: 'X-Usage-Tokens' } },
        { path: '/plain' },
      ],
    });
    expect(config.routes.map(({ count, settle }) => ({ count, settle }))).toEqual([
      { count: 'failed', settle: undefined },
      { count: 'all', settle: { header: 'x-usage-tokens' } },
      { count: 'all', settle: undefined },
    ]);
    expect(error({ routes: [{ path: '/x', count: 'errors' }] })).toBe(
      "routes[0].count: \"errors\" is not one of 'all', 'failed', 'successful'",
    );
    expect(error({ routes: [{ path: '/x', settle: 'x-usage' }] })).toBe(
      'routes[0].settle: expected an object, got "x-usage"',
    );
    expect(error({ routes: [{ path: '/x', settle: {} }] })).toBe(
      'routes[0].settle.header: required: the upstream header with the actual cost',
    );
    expect(error({ routes: [{ path: '/x', settle: { header: 'x usage' } }] })).toBe(
      'routes[0].settle.header: "x usage" must be a header name, e.g. x-usage-tokens',
    );
    expect(error({ routes: [{ path: '/x', settle: { header: 'x', trailer: true } }] })).toBe(
      'routes[0].settle.trailer: unknown field; expected one of header',
    );
    expect(error({ routes: [{ path: '/x', skip: true, count: 'failed' }] })).toBe(
      'routes[0].count: a skipped route takes no limits',
    );
  });

  it('names the bad field in every error', () => {
    expect(error({ routes: [{ path: '/a' }, { path: '/b' }, { path: '/c', limit: '10/fortnight' }] })).toBe(
      "routes[2].limit: '10/fortnight' is not a limit; write <count>/<window>, e.g. 120/1m, 10/s or 5000/1h",
    );
    expect(error({ routes: [{ path: '/c', limit: 0, window: '1m' }] })).toBe(
      'routes[0].limit: 0 must be an integer from 1 to 9007199254740991',
    );
    expect(error({ rules: [{ limit: 5, window: '1m', burst: 9 }] })).toBe(
      "rules[0].burst: 9 is not allowed: 'sliding-window' has no burst; only 'token-bucket' and 'gcra' take one",
    );
    expect(error({ rules: [{ limit: 5 }] })).toBe(
      'rules[0].window: required with a numeric limit (or write limit: "5/1m")',
    );
    expect(error({ rules: ['5/1m'], colour: 'blue' })).toBe(
      'colour: unknown field; expected one of host, port, upstream, upstreamTimeout, clientTimeout, clientConcurrency, store, onStoreError, shadow, headers, blockedStatus, trustProxy, apiKeyHeader, rules, concurrency, tiers, plans, routes, skip, shutdownTimeout, admin, grpc, adaptive, priorityHeader',
    );
    expect(error({ routes: [{ path: 'v1/users' }] })).toBe(
      'routes[0].path: "v1/users" must start with / and have no spaces, e.g. /v1/users/:id or /assets/*',
    );
    expect(error({ routes: [{ path: '/x', method: 'FETCH' }] })).toBe(
      "routes[0].method: \"FETCH\" is not one of 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', '*'",
    );
    expect(error({ routes: [{ path: '/x', skip: true, cost: 3 }] })).toBe(
      'routes[0].cost: a skipped route takes no limits',
    );
    expect(error({ routes: [{ path: '/x', method: 'GET' }], skip: ['GET /x'] })).toBe(
      'skip[0]: GET /x is also defined by routes[0]',
    );
    expect(error({ routes: [{ path: '/Login' }, { path: '/login' }] })).toBe(
      'routes[1]: DELETE /login is also defined by routes[0]',
    );
    expect(error({ routes: [{ path: '/x', caseSensitive: 'yes' }] })).toBe(
      'routes[0].caseSensitive: expected true or false, got "yes"',
    );
    expect(error({ trustProxy: 'maybe' })).toBe(
      `trustProxy: "maybe" is not an IP address, a CIDR such as '10.0.0.0/8', or one of 'loopback', 'linklocal', 'uniquelocal'`,
    );
    expect(error({ trustProxy: ['loopback', '10.0.0.0/33'] })).toContain('trustProxy: "10.0.0.0/33" is not');
    expect(error({ admin: { port: 70_000 } })).toBe('admin.port: 70000 must be an integer from 0 to 65535');
    expect(error({ admin: { path: '/x' } })).toBe('admin.path: unknown field; expected one of host, port');
    expect(error({ routes: [{ path: '/x', cost: 1.5 }] })).toBe(
      'routes[0].cost: 1.5 must be an integer from 1 to 9007199254740991',
    );
    expect(error({ blockedStatus: 401 })).toBe('blockedStatus: 401 must be 403 or 429');
    expect(error({ blockedStatus: '403' })).toBe('blockedStatus: "403" must be 403 or 429');
    expect(error({ onStoreError: 'sometimes' })).toBe(
      "onStoreError: \"sometimes\" is not one of 'open', 'closed'",
    );
    expect(error({ headers: ['draft-6', 'draft-10'] })).toContain(
      "headers: 'draft-6' and 'draft-10' both define RateLimit-Policy",
    );
    expect(error({ upstream: 'ftp://files' })).toBe(
      'upstream: only http:// upstreams are supported, got ftp://',
    );
    expect(error({ store: { redis: 'redis://u:hunter2@host:99999' } })).toBe(
      "store.redis: 'redis://u:***@host:99999' is not a valid Redis URL",
    );
    expect(error({ store: { timeout: '-1s' } })).toContain('store.timeout: "-1s" is not a duration');
    expect(error({ plans: { free: ['1/1m'] } })).toContain('plans: plans need tiers');
    expect(error({ tiers: { header: 'x-api-key', default: 'free' } })).toContain('tiers: tiers need plans');
    expect(
      error({
        tiers: { header: 'x-plan', trust: 'header', default: 'free' },
        plans: { free: { rules: ['1/1m'], shadow: 'yes' } },
      }),
    ).toBe('plans.free.shadow: expected true or false, got "yes"');
    expect(error({ tiers: { header: 'x-api-key', default: 'gold' }, plans: { free: ['1/1m'] } })).toBe(
      'tiers.default: "gold" is not one of \'free\'',
    );
    expect(
      error({
        tiers: { header: 'x-api-key', default: 'free', keys: { sk_live_secret: 'gold' } },
        plans: { free: ['1/1m'] },
      }),
    ).toBe('tiers.keys (entry 1): "gold" is not one of \'free\'');
    expect(
      error({
        tiers: { header: 'x-plan', default: 'free', trust: 'header' },
        plans: { free: ['1/1m'] },
        routes: [{ path: '/x', plans: { gold: ['1/1s'] } }],
      }),
    ).toBe('routes[0].plans.gold: unknown field; expected one of free');
    expect(
      error({
        rules: [
          { name: 'a', limit: '1/s' },
          { name: 'a', limit: '2/s' },
        ],
      }),
    ).toBe('rules: duplicate rule name "a"; give each rule a distinct name');
    expect(
      error({
        tiers: { header: 'x-plan', default: 'free', trust: 'header' },
        plans: { free: ['1/1m'], 'pro.v2': ['9/1m'] },
      }),
    ).toBe(
      `plans["pro.v2"]: plan name must be 1-64 letters, digits, _ or - (starting with a letter or digit), not 'override'`,
    );
  });

  it('regression: a tier header that names the plan without keys must be declared trust: header', () => {
    const plans = { free: ['1/1m'], pro: ['9/1m'] };
    expect(error({ tiers: { header: 'x-plan', default: 'free' }, plans })).toBe(
      'tiers: without keys, any client picks its plan by sending x-plan: <plan>; list the API keys in tiers.keys, or declare trust: header if that is intended',
    );
    expect(error({ tiers: { header: 'x-plan', default: 'free', trust: 'keys' }, plans })).toBe(
      `tiers.trust: "keys" is not one of 'header'`,
    );
    expect(
      error({ tiers: { header: 'x-api-key', default: 'free', trust: 'header', keys: { k: 'pro' } }, plans }),
    ).toBe('tiers.trust: header is for tiers without keys; with tiers.keys only listed keys choose a plan');
    const trusted = parseGatewayConfig({
      tiers: { header: 'x-plan', default: 'free', trust: 'header' },
      plans,
    });
    expect(trusted.tiers?.trust).toBe('header');
  });

  it('reads API keys only from the tier header of listed keys', () => {
    const plans = { free: ['1/1m'], pro: ['9/1m'] };
    const tiers = { header: 'Authorization', default: 'free', keys: { k: 'pro' } };
    expect(parseGatewayConfig({ tiers, plans }).apiKeyHeader).toBe('authorization');
    expect(parseGatewayConfig({ tiers, plans, apiKeyHeader: false }).apiKeyHeader).toBe(false);
    expect(error({ tiers, plans, apiKeyHeader: 'x-api-key' })).toBe(
      "apiKeyHeader: 'x-api-key' is not tiers.header 'authorization': API keys count only when tiers.keys lists them, read from tiers.header; drop apiKeyHeader or set it to false",
    );
    expect(parseGatewayConfig({ admin: { port: 0 } }).admin).toBeUndefined();
  });

  it('never echoes an API key from tiers.keys in an error', () => {
    const message = error({
      tiers: { header: 'x-api-key', default: 'free', keys: { sk_live_do_not_print: 7 } },
      plans: { free: ['1/1m'] },
    });
    expect(message).toBe("tiers.keys (entry 1): 7 is not one of 'free'");
  });

  it('names the flag, not the field, for values that came from flags', () => {
    expect(() => parseGatewayConfig({ upstream: 'nope' }, { upstream: '--upstream' })).toThrow(
      '--upstream: "nope" is not a URL; write e.g. http://127.0.0.1:3000',
    );
    expect(() => parseGatewayConfig({ port: 'eighty' }, { port: '--port' })).toThrow(
      '--port: "eighty" must be an integer from 0 to 65535',
    );
  });
});

describe('config from flags and files', () => {
  const flags = (values: Record<string, string | string[]>) => ({ values, positionals: [] });

  it('reads --client-timeout and --client-concurrency (defaults 30s and 64), naming the flag in errors', async () => {
    expect(parseGatewayConfig({})).toMatchObject({ clientTimeoutMs: 30_000, clientConcurrency: 64 });
    const config = await loadConfig(flags({ 'client-timeout': '5s', 'client-concurrency': '8' }), {});
    expect(config).toMatchObject({ clientTimeoutMs: 5000, clientConcurrency: 8 });
    expect(parseGatewayConfig({ clientTimeout: '2s', clientConcurrency: 3 })).toMatchObject({
      clientTimeoutMs: 2000,
      clientConcurrency: 3,
    });
    await expect(loadConfig(flags({ 'client-concurrency': '0' }), {})).rejects.toThrow(
      '--client-concurrency: 0 must be an integer from 1 to 100000',
    );
    await expect(loadConfig(flags({ 'client-concurrency': 'many' }), {})).rejects.toThrow(
      '--client-concurrency: "many" must be an integer from 1 to 100000',
    );
    await expect(loadConfig(flags({ 'client-timeout': 'soon' }), {})).rejects.toThrow(/^--client-timeout: /);
  });

  it('folds flags over the file and REDIS_URL, naming the flag in errors', async () => {
    const config = await loadConfig(
      flags({
        limit: ['10/s', '100/1m'],
        algorithm: 'gcra',
        burst: '20',
        port: '0',
        headers: 'draft-10,legacy',
      }),
      { REDIS_URL: 'redis://127.0.0.1:6390' },
    );
    expect(config.plans.get('default')).toEqual([
      { algorithm: 'gcra', limit: 10, window: 1000, burst: 20 },
      { algorithm: 'gcra', limit: 100, window: 60_000, burst: 20 },
    ]);
    expect(config).toMatchObject({
      port: 0,
      headers: ['draft-10', 'legacy'],
      redis: { url: 'redis://127.0.0.1:6390' },
    });
    await expect(loadConfig(flags({ limit: ['5/1m'], algorithm: 'leaky-bucket' }), {})).rejects.toThrow(
      '--limit[0].algorithm: "leaky-bucket" is not one of \'fixed-window\'',
    );
    await expect(loadConfig(flags({ algorithm: 'gcra' }), {})).rejects.toThrow(
      '--algorithm goes with --limit',
    );
    await expect(loadConfig(flags({ 'on-store-error': 'maybe' }), {})).rejects.toThrow(
      "--on-store-error: \"maybe\" is not one of 'open', 'closed'",
    );
    await expect(loadConfig(flags({ config: '/nonexistent/gateway.yaml' }), {})).rejects.toThrow(
      '--config: cannot read /nonexistent/gateway.yaml: no such file',
    );
  });
});
