import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { rateLimit } from '../../src/http/express.js';
import { floodgate } from '../../src/http/fastify.js';
import { createFetchGuard } from '../../src/http/fetch.js';
import { rateLimit as honoRateLimit } from '../../src/http/hono.js';
import { rateLimit as koaRateLimit } from '../../src/http/koa.js';
import { FloodgateGuard, type FloodgateGuardOptions } from '../../src/http/nestjs.js';
import { createHttpGuard } from '../../src/http/node.js';
import { createLimiter, memoryStore } from '../../src/index.js';

const rules = { algorithm: 'fixed-window', limit: 1, window: '1s' } as const;
const limiter = createLimiter({ rules });

/** Every adapter validates the shared options the same way, when it is created. */
const ADAPTERS: [string, (options: never) => unknown][] = [
  ['rateLimit', rateLimit as (options: never) => unknown],
  ['createHttpGuard', createHttpGuard as (options: never) => unknown],
  ['createFetchGuard', createFetchGuard as (options: never) => unknown],
  ['rateLimit', honoRateLimit as (options: never) => unknown],
  ['rateLimit', koaRateLimit as (options: never) => unknown],
  ['FloodgateGuard', (options: FloodgateGuardOptions) => new FloodgateGuard(options)],
];

describe.each(ADAPTERS)('%s options', (name, create) => {
  const make = (options: unknown) => () => create(options as never);

  it('accepts a limiter, or rules (with store and prefix) to build one', () => {
    expect(make({ limiter })).not.toThrow();
    expect(make({ rules, store: memoryStore(), prefix: 'p' })).not.toThrow();
    expect(make({ rules, headers: ['draft-10', 'legacy'], cost: 2 })).not.toThrow();
    expect(make({ limiter, blockedStatus: 403 })).not.toThrow();
    expect(make({ limiter, blockedStatus: 429 })).not.toThrow();
  });

  it('names the option and what it accepts', () => {
    expect(make(undefined)).toThrow(
      new TypeError(`${name}: expected an options object such as { limiter }, got undefined`),
    );
    expect(make({})).toThrow(/^limiter: required; pass limiter: createLimiter/);
    expect(make({ limiter, rules })).toThrow(/^limiter: give either a limiter or rules/);
    expect(make({ limiter: {} })).toThrow(
      /^limiter: expected a limiter made by createLimiter\(\), got an object/,
    );
    expect(make({ rules: { algorithm: 'leaky', limit: 1, window: '1s' } })).toThrow(
      /^rules.algorithm: "leaky" is not one of/,
    );
    expect(make({ limiter, limit: 5 })).toThrow(
      new RegExp(`^${name}: unknown option 'limit'; the options are limiter, rules,`),
    );
    expect(make({ limiter, headers: 'draft-7' })).toThrow(
      "headers: \"draft-7\" is not one of 'draft-6', 'draft-10', 'legacy', false, or a list of styles",
    );
    expect(make({ limiter, headers: ['legacy', true] })).toThrow(/^headers\[1\]: true is not one of/);
    expect(make({ limiter, headers: ['draft-6', 'draft-10'] })).toThrow(
      /^headers: 'draft-6' and 'draft-10' cannot be sent together/,
    );
    expect(make({ limiter, key: 'x-user' })).toThrow('key: expected a function, got "x-user"');
    expect(make({ limiter, skip: true })).toThrow('skip: expected a function, got true');
    expect(make({ limiter, onDecision: 1 })).toThrow('onDecision: expected a function, got 1');
    expect(make({ limiter, onLimited: 'no' })).toThrow('onLimited: expected a function, got "no"');
    expect(make({ limiter, cost: 0 })).toThrow(
      'cost: 0 must be a positive integer or a function (req) => positive integer',
    );
    expect(make({ limiter, cost: 1.5 })).toThrow(/^cost: 1.5 must be a positive integer/);
    expect(make({ limiter, apiKeyHeader: 'bad header' })).toThrow(
      'apiKeyHeader: "bad header" must be a header name or false',
    );
    expect(make({ limiter, apiKeySecret: '' })).toThrow('apiKeySecret: expected a non-empty string, got ""');
    expect(make({ limiter, ipv6Subnet: 0 })).toThrow('ipv6Subnet: 0 must be an integer from 1 to 128');
    expect(make({ limiter, ipv6Subnet: 129 })).toThrow(/^ipv6Subnet: 129/);
    expect(make({ limiter, blockedStatus: 401 })).toThrow('blockedStatus: 401 must be 403 or 429');
    expect(make({ limiter, blockedStatus: '403' })).toThrow('blockedStatus: "403" must be 403 or 429');
  });

  it('validates the response-aware options', () => {
    expect(make({ limiter, skipSuccessfulRequests: true, requestWasSuccessful: () => true })).not.toThrow();
    expect(make({ limiter, skipFailedRequests: true, settle: 'X-Usage-Tokens' })).not.toThrow();
    expect(make({ limiter, settle: () => 3 })).not.toThrow();
    expect(make({ limiter, skipFailedRequests: 'yes' })).toThrow(
      'skipFailedRequests: expected true or false, got "yes"',
    );
    expect(make({ limiter, skipSuccessfulRequests: 1 })).toThrow(
      'skipSuccessfulRequests: expected true or false, got 1',
    );
    expect(make({ limiter, skipFailedRequests: true, skipSuccessfulRequests: true })).toThrow(
      'skipFailedRequests, skipSuccessfulRequests: give at most one of them true (both would count no request)',
    );
    expect(make({ limiter, skipFailedRequests: true, requestWasSuccessful: 200 })).toThrow(
      'requestWasSuccessful: expected a function (req, res) => boolean, got 200',
    );
    expect(make({ limiter, requestWasSuccessful: () => true })).toThrow(
      'requestWasSuccessful: only used with skipFailedRequests: true or skipSuccessfulRequests: true; give one of them',
    );
    expect(make({ limiter, settle: 'x usage' })).toThrow(
      'settle: "x usage" must be a header name (read as a non-negative integer) or a function (req, res) => actual cost',
    );
    expect(make({ limiter, settle: 5 })).toThrow(/^settle: 5 must be a header name/);
  });
});

describe('adapter-specific options', () => {
  it('node and fetch guards validate trustProxy; fetch validates ip', () => {
    expect(() => createHttpGuard({ limiter, trustProxy: 'somewhere' })).toThrow(
      /^trustProxy: "somewhere" is not an IP address/,
    );
    expect(() => createFetchGuard({ limiter, trustProxy: -2 })).toThrow(
      /^trustProxy: -2 must be a whole number of hops/,
    );
    expect(() => createFetchGuard({ limiter, ip: 'x' as never })).toThrow('ip: expected a function, got "x"');
    expect(() => rateLimit({ limiter, trustProxy: 1 } as never)).toThrow(
      /^rateLimit: unknown option 'trustProxy'/,
    );
  });

  it('fastify validates at registration and at route definition', async () => {
    await expect(
      Fastify()
        .register(floodgate, { limiter, headers: 'x' as never })
        .ready(),
    ).rejects.toThrow(/^headers: "x" is not one of/);
    await expect(
      Fastify()
        .register(floodgate, {} as never)
        .ready(),
    ).rejects.toThrow(/^limiter: required/);
    await expect(
      Fastify()
        .register(floodgate, { limiter, global: 'yes' as never })
        .ready(),
    ).rejects.toThrow('floodgate global: expected true or false, got "yes"');
    await expect(Fastify().register(floodgate, { global: false, cost: -1 }).ready()).rejects.toThrow(
      /^cost: -1 must be a positive integer/,
    );
    const app = Fastify();
    await app.register(floodgate, { global: false });
    expect(() =>
      app.get('/x', { config: { rateLimit: { rules: { ...rules, limit: 0 } } } }, () => 'x'),
    ).toThrow(/^rules.limit: 0 must be an integer from 1/);
    expect(() => app.get('/y', { config: { rateLimit: 'strict' as never } }, () => 'y')).toThrow(
      'config.rateLimit of /y: expected route options such as { rules } or false, got "strict"',
    );
    expect(() => app.get('/z', { config: { rateLimit: {} } }, () => 'z')).toThrow(/^limiter: required/);
    await app.close();
  });
});
