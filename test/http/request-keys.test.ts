import { createHash, createHmac } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalIp, formatIPv6, ipIdentity, parseIPv6 } from '../../src/http/ip.js';
import { apiKeyOrAddress, KNOWN_KEY_RESOLVER } from '../../src/http/known-key.js';
import { clientAddress, parseTrustProxy } from '../../src/http/proxy.js';
import {
  addressKey,
  apiKeyFrom,
  DEFAULT_KEY_POLICY,
  defaultKey,
  hashApiKey,
  MAX_API_KEY_LENGTH,
  UNKNOWN_CLIENT,
} from '../../src/http/request-keys.js';

describe('client addresses', () => {
  it('parses and formats IPv6 per RFC 5952', () => {
    expect(parseIPv6('2001:db8::1')).toEqual([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]);
    expect(parseIPv6('::ffff:192.0.2.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0xc000, 0x0201]);
    expect(parseIPv6('fe80::1%eth0')).toEqual([0xfe80, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIPv6('1.2.3.4')).toBeUndefined();
    expect(formatIPv6([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1])).toBe('2001:db8::1:0:0:1');
    expect(formatIPv6([0, 0, 0, 0, 0, 0, 0, 0])).toBe('::');
    expect(formatIPv6([1, 0, 2, 0, 3, 0, 4, 0])).toBe('1:0:2:0:3:0:4:0');
    expect(canonicalIp('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1');
  });

  it('normalises IPv4-mapped IPv6 to IPv4', () => {
    expect(ipIdentity('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(ipIdentity('::FFFF:7f00:1')).toBe('127.0.0.1');
    expect(ipIdentity('203.0.113.9')).toBe('203.0.113.9');
    expect(canonicalIp('::ffff:10.1.2.3')).toBe('10.1.2.3');
  });

  it('groups IPv6 addresses by the configured prefix (default /64)', () => {
    const a = ipIdentity('2001:db8:1:2:aaaa::1');
    expect(a).toBe('2001:db8:1:2::/64');
    expect(ipIdentity('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe(a);
    expect(ipIdentity('2001:db8:1:3::1')).not.toBe(a);
    expect(ipIdentity('2001:db8:1:2ff::1', 56)).toBe('2001:db8:1:200::/56');
    expect(ipIdentity('2001:db8::1', 128)).toBe('2001:db8::1/128');
    expect(ipIdentity('2001:db8::1', 1)).toBe('::/1');
    expect(ipIdentity('::1')).toBe('::/64');
  });

  it('accepts exactly the addresses node:net accepts (the grammar is written without node:net)', () => {
    const octet = fc.oneof(
      fc.integer({ min: 0, max: 300 }).map(String),
      fc.constantFrom('00', '01', '1e1', ''),
    );
    const group = fc.oneof(
      fc.integer({ min: 0, max: 0x1ffff }).map((n) => n.toString(16)),
      fc.constant(''),
    );
    const text = fc.oneof(
      fc.array(octet, { minLength: 3, maxLength: 5 }).map((parts) => parts.join('.')),
      fc
        .tuple(
          fc.array(group, { minLength: 1, maxLength: 10 }),
          fc.option(fc.array(octet, { minLength: 4, maxLength: 4 })),
        )
        .map(([groups, v4]) => groups.join(':') + (v4 === null ? '' : `:${v4.join('.')}`)),
      fc.stringMatching(/^[0-9a-fA-F:.]{0,45}$/),
    );
    fc.assert(
      fc.property(text, (candidate) => {
        expect(canonicalIp(candidate) !== undefined, candidate).toBe(isIP(candidate) !== 0);
      }),
      { numRuns: 5000 },
    );
  });

  it('refuses what is not an address', () => {
    for (const bad of ['', 'garbage', '1.2.3.4.5', '999.1.1.1', '1.2.3.4:80', '[::1]', 'a'.repeat(10_000)]) {
      expect(ipIdentity(bad)).toBeUndefined();
      expect(addressKey(bad, 64)).toBe(UNKNOWN_CLIENT);
    }
    expect(addressKey(undefined, 64)).toBe(UNKNOWN_CLIENT);
  });
});

describe('API keys', () => {
  it('accepts one well-formed key, repeated or not', () => {
    expect(apiKeyFrom('sk_live_123')).toBe('sk_live_123');
    expect(apiKeyFrom('  sk_live_123 ')).toBe('sk_live_123');
    expect(apiKeyFrom('sk_live_123, sk_live_123')).toBe('sk_live_123');
    expect(apiKeyFrom('k'.repeat(MAX_API_KEY_LENGTH))).toBe('k'.repeat(MAX_API_KEY_LENGTH));
  });

  it('treats missing, conflicting, over-long, control and non-ASCII values as no key', () => {
    for (const bad of [
      undefined,
      '',
      ' , ',
      'a, b',
      'k'.repeat(MAX_API_KEY_LENGTH + 1),
      'k'.repeat(1_000_000),
      'a\tb',
      'a b',
      'a\x00b',
      'caf\xe9',
      'ключ',
    ]) {
      expect(apiKeyFrom(bad)).toBeUndefined();
    }
  });

  it('hashes keys: never in clear, stable, HMAC with a secret', () => {
    const plain = hashApiKey('sk_live_123', undefined);
    expect(plain).toMatch(/^key:[A-Za-z0-9_-]{43}$/);
    expect(plain).not.toContain('sk_live_123');
    expect(hashApiKey('sk_live_123', undefined)).toBe(plain);
    const keyed = hashApiKey('sk_live_123', Buffer.from('server secret'));
    expect(keyed).toMatch(/^key:[A-Za-z0-9_-]{43}$/);
    expect(keyed).not.toBe(plain);
    expect(hashApiKey('sk_live_124', undefined)).not.toBe(plain);
  });

  it('hashes exactly as node:crypto SHA-256 and HMAC-SHA-256 (the digests are written without it)', () => {
    const label = 'floodgate api key\0';
    expect(hashApiKey('sk_live_123', undefined)).toBe(
      `key:${createHash('sha256').update(label).update('sk_live_123').digest('base64url')}`,
    );
    expect(hashApiKey('sk_live_123', new TextEncoder().encode('server secret'))).toBe(
      `key:${createHmac('sha256', 'server secret').update('sk_live_123').digest('base64url')}`,
    );
  });

  it('builds the default key from the API key, else the address', () => {
    expect(defaultKey('sk_1', '203.0.113.1', DEFAULT_KEY_POLICY)).toBe(hashApiKey('sk_1', undefined));
    expect(defaultKey(undefined, '203.0.113.1', DEFAULT_KEY_POLICY)).toBe('ip:203.0.113.1');
    expect(defaultKey('a, b', '2001:db8::5', DEFAULT_KEY_POLICY)).toBe('ip:2001:db8::/64');
    // An address can never look like an API key's digest, nor the reverse.
    expect(defaultKey('ip:203.0.113.1', '198.51.100.1', DEFAULT_KEY_POLICY)).toMatch(/^key:/);
  });
});

describe('apiKeyOrAddress', () => {
  const policy = { ...DEFAULT_KEY_POLICY, apiKeySecret: Buffer.from('pepper') };

  it('keys by a known key (hashed with the secret), else by the address exactly as without a key', async () => {
    const key = apiKeyOrAddress({ header: 'X-Api-Key', known: (value) => value === 'sk_known' });
    const { header, resolve } = key[KNOWN_KEY_RESOLVER];
    expect(header).toBe('x-api-key');
    expect(resolve('sk_known', '203.0.113.1', policy)).toBe(hashApiKey('sk_known', policy.apiKeySecret));
    expect(resolve('sk_invented', '203.0.113.1', policy)).toBe('ip:203.0.113.1');
    expect(resolve('a, b', '2001:db8::5', policy)).toBe('ip:2001:db8::/64');
    expect(resolve(undefined, undefined, policy)).toBe(UNKNOWN_CLIENT);
    const lookedUp = apiKeyOrAddress({
      header: 'authorization',
      known: async (value) => value === 'sk_known',
    });
    expect(await lookedUp[KNOWN_KEY_RESOLVER].resolve('sk_known', '203.0.113.1', policy)).toMatch(/^key:/);
    // Only `true` counts: a truthy non-boolean is not an answer.
    const sloppy = apiKeyOrAddress({ header: 'x-api-key', known: () => 'yes' as unknown as boolean });
    expect(await sloppy[KNOWN_KEY_RESOLVER].resolve('sk_known', '203.0.113.1', policy)).toBe(
      'ip:203.0.113.1',
    );
  });

  it('called directly, reads the request’s headers and address', () => {
    const key = apiKeyOrAddress({ header: 'x-api-key', known: (value) => value === 'sk_known' });
    expect(key({ headers: { 'x-api-key': 'sk_known' }, ip: '203.0.113.1' })).toBe(
      hashApiKey('sk_known', undefined),
    );
    expect(key({ headers: { 'x-api-key': 'nope' }, socket: { remoteAddress: '203.0.113.2' } })).toBe(
      'ip:203.0.113.2',
    );
    expect(key({ headers: new Headers({ 'x-api-key': 'sk_known' }) })).toBe(
      hashApiKey('sk_known', undefined),
    );
  });

  it('rejects bad options naming the option and what it accepts', () => {
    expect(() => apiKeyOrAddress({ header: 'bad header', known: () => true })).toThrow(
      `apiKeyOrAddress header: "bad header" must be a header name such as 'x-api-key'`,
    );
    expect(() => apiKeyOrAddress({ header: 'x-api-key', known: new Set() as never })).toThrow(
      /apiKeyOrAddress known: expected a function \(key\) => boolean/,
    );
    expect(() => apiKeyOrAddress(undefined as never)).toThrow(/expected options \{ header, known \}/);
  });
});

describe('trusted proxies (node:http and Fetch guards)', () => {
  const peer = '127.0.0.1';
  const xff = '198.51.100.1, 203.0.113.5, 10.0.0.2';

  it('ignores X-Forwarded-For unless told to trust it', () => {
    expect(clientAddress(peer, xff, parseTrustProxy(undefined))).toBe(peer);
    expect(clientAddress(peer, xff, parseTrustProxy(false))).toBe(peer);
    expect(clientAddress(peer, xff, parseTrustProxy(0))).toBe(peer);
  });

  it('trusts a number of hops, counted from the socket', () => {
    expect(clientAddress(peer, xff, parseTrustProxy(1))).toBe('10.0.0.2');
    expect(clientAddress(peer, xff, parseTrustProxy(2))).toBe('203.0.113.5');
    expect(clientAddress(peer, xff, parseTrustProxy(9))).toBe('198.51.100.1');
    expect(clientAddress(peer, undefined, parseTrustProxy(2))).toBe(peer);
  });

  it('trusts listed proxies and stops at the first untrusted hop', () => {
    const trust = parseTrustProxy(['loopback', '10.0.0.0/8']);
    expect(clientAddress(peer, xff, trust)).toBe('203.0.113.5');
    expect(clientAddress('::ffff:127.0.0.1', xff, trust)).toBe('203.0.113.5');
    // A client that forges X-Forwarded-For when it reaches the server directly gets nowhere.
    expect(clientAddress('203.0.113.9', '10.0.0.1, 1.1.1.1', trust)).toBe('203.0.113.9');
    expect(clientAddress(peer, 'garbage', parseTrustProxy('loopback'))).toBe('garbage');
    expect(clientAddress(peer, xff, parseTrustProxy('uniquelocal'))).toBe(peer);
    expect(clientAddress('fe80::1', '2001:db8::7', parseTrustProxy('linklocal'))).toBe('2001:db8::7');
  });

  it('matches CIDR ranges exactly as node:net BlockList does', () => {
    const v4 = fc
      .tuple(...Array.from({ length: 4 }, () => fc.integer({ min: 0, max: 255 })))
      .map((o) => o.join('.'));
    const v6 = fc
      .array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 })
      .map((groups) => groups.map((g) => g.toString(16)).join(':'));
    const pair = fc.oneof(
      fc.tuple(v4, fc.integer({ min: 0, max: 32 }), v4),
      fc.tuple(v6, fc.integer({ min: 0, max: 128 }), v6),
    );
    fc.assert(
      fc.property(pair, fc.boolean(), ([network, bits, address], near) => {
        const family = address.includes(':') ? 'ipv6' : 'ipv4';
        // Half the time the address shares the network's first groups, so matches are common.
        const hop =
          near && family === 'ipv4'
            ? `${network.split('.').slice(0, 3).join('.')}.${address.split('.')[3]}`
            : address;
        const list = new BlockList();
        list.addSubnet(network, bits, family);
        const trust = parseTrustProxy(`${network}/${bits}`);
        expect(trust([hop, '203.0.113.1']) === 1, `${hop} in ${network}/${bits}`).toBe(
          list.check(hop, family),
        );
      }),
      { numRuns: 3000 },
    );
  });

  it('trusts every hop with true', () => {
    expect(clientAddress(peer, xff, parseTrustProxy(true))).toBe('198.51.100.1');
  });

  it('rejects invalid settings with the option name and the allowed values', () => {
    expect(() => parseTrustProxy(-1)).toThrow(/trustProxy: -1 must be a whole number of hops/);
    expect(() => parseTrustProxy(1.5)).toThrow(/trustProxy/);
    expect(() => parseTrustProxy('nearby')).toThrow(/trustProxy: "nearby" is not an IP address, a CIDR/);
    expect(() => parseTrustProxy(['10.0.0.0/33'])).toThrow(/trustProxy/);
    expect(() => parseTrustProxy([])).toThrow(/trustProxy: expected false, true, a number of hops/);
    expect(() => parseTrustProxy({})).toThrow(TypeError);
  });
});
