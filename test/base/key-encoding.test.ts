/**
 * Redis key layout: user keys are escaped or digested so that they cannot move their state to
 * another cluster slot, cannot collide with one another and stay bounded in size; every key
 * of one user key shares one hash tag (the encoded user key) and therefore one slot.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeKey, keyHead, MAX_ENCODED_KEY, splitHead } from '../../src/base/key-encoding.js';
import { createLimiter, redisStore } from '../../src/index.js';
import { crc16, hashTag, keySlot } from '../support/crc16.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { SLOW_MACHINE_TIMEOUT } from '../support/timeouts.js';

const ENCODED_ALPHABET = /^[A-Za-z0-9_.:@/+=~%-]+$/;
const DIGEST = /^#[A-Za-z0-9_-]{43}$/;

const TRICKY_KEYS = [
  'a',
  'user:1',
  'org_9921',
  '203.0.113.7',
  '2001:db8::1',
  'a@b.example',
  '{',
  '}',
  '{}',
  '}{',
  '{a}',
  'a{b}c',
  '{{a}}',
  'a}b{c',
  '{user1000}.following',
  '%',
  '%7B',
  '%25',
  'a%20b',
  'a b',
  ' ',
  '#',
  '#abc',
  `#${'A'.repeat(43)}`,
  '\t',
  '\n',
  '\r\n',
  '\0',
  '\x7f',
  'é',
  'e\u0301',
  '%C3%A9',
  '日本',
  '🙂',
  '\uD800',
  '\uDC00',
  '\uD800\uDC00',
  '\uDC00\uD800',
  'a\uD800b',
  '\uD800\u0080'.repeat(20),
  '\0\u0600\0'.repeat(20),
  'x'.repeat(MAX_ENCODED_KEY),
  'x'.repeat(MAX_ENCODED_KEY + 1),
  'x'.repeat(10_000),
  '{'.repeat(42),
  '{'.repeat(43),
  '日'.repeat(14),
  '日'.repeat(15),
];

/** Any UTF-16 string, lone surrogates included. */
const anyString = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
  fc
    .array(fc.integer({ min: 0, max: 0xffff }), { minLength: 1, maxLength: 80 })
    .map((units) => String.fromCharCode(...units)),
  fc.string({
    unit: fc.constantFrom('{', '}', '%', '#', ' ', 'a', '\uD800', 'é'),
    minLength: 1,
    maxLength: 150,
  }),
);

describe('encodeKey', () => {
  it('escapes braces, %, #, spaces, control and non-ASCII characters', () => {
    expect(
      ['{', '}', '{}', '}{', '%', '#', ' ', '\n', '\0', '\x7f', 'é', '🙂', 'a{b}c'].map(encodeKey),
    ).toEqual([
      '%7B',
      '%7D',
      '%7B%7D',
      '%7D%7B',
      '%25',
      '%23',
      '%20',
      '%0A',
      '%00',
      '%7F',
      '%C3%A9',
      '%F0%9F%99%82',
      'a%7Bb%7Dc',
    ]);
  });

  it('keeps keys of safe characters as they are', () => {
    for (const key of ['a', 'user:1', 'org_9921', '203.0.113.7', 'a@b.example', 'x'.repeat(MAX_ENCODED_KEY)])
      expect(encodeKey(key)).toBe(key);
  });

  it('digests lone surrogates and keys whose encoding would pass the bound', () => {
    for (const key of [
      '\uD800',
      '\uDC00',
      'a\uD800b',
      'x'.repeat(MAX_ENCODED_KEY + 1),
      'x'.repeat(10_000),
      '{'.repeat(43),
      '日'.repeat(15),
    ])
      expect(encodeKey(key)).toMatch(DIGEST);
    expect(encodeKey('{'.repeat(42))).toBe('%7B'.repeat(42));
    expect(encodeKey('日'.repeat(14))).toBe('%E6%97%A5'.repeat(14));
  });

  it('regression: a lone-surrogate key shared its digest with the well-formed key of the same bytes', () => {
    // The UTF-16LE bytes of the first are the UTF-8 bytes of the second.
    const lone = '\uD800\u0080'.repeat(20);
    const wellFormed = '\0\u0600\0'.repeat(20);
    expect(Buffer.from(lone, 'utf16le').equals(Buffer.from(wellFormed, 'utf8'))).toBe(true);
    expect(encodeKey(lone)).not.toBe(encodeKey(wellFormed));
  });

  it('gives distinct tricky keys distinct encodings', () => {
    const encoded = new Map<string, string>();
    for (const key of TRICKY_KEYS) {
      const previous = encoded.get(encodeKey(key));
      expect(previous, `${JSON.stringify(key)} collides with ${JSON.stringify(previous)}`).toBeUndefined();
      encoded.set(encodeKey(key), key);
    }
  });

  it('is bounded, brace-free and reversible (percent form) or a digest, for any string', () => {
    fc.assert(
      fc.property(anyString, (key) => {
        const encoded = encodeKey(key);
        expect(encoded.length).toBeLessThanOrEqual(MAX_ENCODED_KEY);
        if (encoded.startsWith('#')) {
          expect(encoded).toMatch(DIGEST);
        } else {
          expect(encoded).toMatch(ENCODED_ALPHABET);
          // The percent form is exactly URI percent-encoding of UTF-8, so it decodes back to the key.
          expect(decodeURIComponent(encoded)).toBe(key);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never maps two distinct keys to one encoding', () => {
    fc.assert(
      fc.property(fc.uniqueArray(anyString, { minLength: 2, maxLength: 30 }), (keys) => {
        expect(new Set(keys.map(encodeKey)).size).toBe(keys.length);
      }),
      { numRuns: 300 },
    );
  });
});

describe('splitHead', () => {
  it('gives back the prefix and encoded key of any head, for any prefix and key', () => {
    const prefix = fc.stringMatching(/^[A-Za-z0-9_.:@/+=~-]{1,64}$/);
    fc.assert(
      fc.property(prefix, fc.oneof(fc.string(), fc.constantFrom(...TRICKY_KEYS)), (p, key) => {
        fc.pre(key.length > 0);
        expect(splitHead(keyHead(p, key))).toEqual({ prefix: p, encoded: encodeKey(key) });
      }),
    );
  });

  it('refuses a string that is not a head, naming the expected form', () => {
    for (const bad of ['user', 'p{k}', ':{k}', 'p:{k', 'p:k}']) {
      expect(() => splitHead(bad), bad).toThrow(/key head: expected '<prefix>:\{<encoded key>\}'/);
    }
  });
});

describe('hash tags', () => {
  it('the hash tag of every key of one user key is exactly its encoding', () => {
    for (const prefix of ['floodgate', 'a:b', 'x.y-z']) {
      for (const key of TRICKY_KEYS) {
        for (const tail of [':r:fw', ':r:sl', ':r:sl:n']) {
          const redisKey = keyHead(prefix, key) + tail;
          expect(hashTag(redisKey).toString()).toBe(encodeKey(key));
        }
      }
    }
  });

  it('follows the Redis rule: first { to the first } after it, only if non-empty', () => {
    expect(hashTag('foo{}{bar}').toString()).toBe('foo{}{bar}');
    expect(hashTag('foo{{bar}}').toString()).toBe('{bar');
    expect(hashTag('{user1000}.following').toString()).toBe('user1000');
    expect(hashTag('foo{bar').toString()).toBe('foo{bar');
    expect(hashTag('foo}bar{').toString()).toBe('foo}bar{');
  });

  it('CRC16-XMODEM matches the Redis Cluster specification vector', () => {
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
  });
});

describe('on real Redis servers', () => {
  let server: RedisServer;
  let clusterNode: RedisServer;
  let client: Redis;
  let clusterClient: Redis;
  let clusterDir: string;

  beforeAll(async () => {
    clusterDir = await mkdtemp(join(tmpdir(), 'floodgate-keys-'));
    [server, clusterNode] = await Promise.all([
      startRedisServer(),
      // A lone cluster-mode node serves CLUSTER KEYSLOT (it owns no slots, so it stores nothing).
      startRedisServer({
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(clusterDir, 'nodes.conf'),
          '--dir',
          clusterDir,
        ],
      }),
    ]);
    client = new Redis(server.port, '127.0.0.1');
    clusterClient = new Redis(clusterNode.port, '127.0.0.1');
  });

  afterAll(async () => {
    client?.disconnect();
    clusterClient?.disconnect();
    await Promise.all([server?.stop(), clusterNode?.stop()]);
    if (clusterDir) await rm(clusterDir, { recursive: true, force: true });
  });

  it('CLUSTER KEYSLOT agrees with the slot computed here, braces and all', async () => {
    const keys = [
      'foo{}{bar}',
      'foo{{bar}}',
      '{user1000}.following',
      '123456789',
      ...TRICKY_KEYS.map((key) => `${keyHead('floodgate', key)}:r:sl:n`),
    ];
    for (const key of keys) {
      expect(await clusterClient.call('CLUSTER', 'KEYSLOT', key), key).toBe(keySlot(key));
    }
  });

  it('every key written for one user key shares its slot and carries its encoding as hash tag', async () => {
    const limiter = createLimiter({
      timeout: SLOW_MACHINE_TIMEOUT,
      store: redisStore({ client }),
      prefix: 'kt',
      rules: [
        { name: 'log', algorithm: 'sliding-log', limit: 5, window: '1m' },
        { name: 'bucket', algorithm: 'token-bucket', limit: 5, window: '1m' },
        { name: 'window', algorithm: 'fixed-window', limit: 5, window: '1m' },
      ],
    });
    for (const key of TRICKY_KEYS) expect((await limiter.check(key)).allowed).toBe(true);

    const written = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'MATCH', 'kt:*', 'COUNT', 1000);
      for (const key of batch) written.add(key);
      cursor = next;
    } while (cursor !== '0');

    const expected = TRICKY_KEYS.flatMap((key) => {
      const head = keyHead('kt', key);
      return [`${head}:log:sl`, `${head}:log:sl:n`, `${head}:bucket:tb`, `${head}:window:fw`];
    });
    expect([...written].sort()).toEqual([...expected].sort());
    for (const key of TRICKY_KEYS) {
      const keys = [...written].filter((redisKey) => hashTag(redisKey).toString() === encodeKey(key));
      expect(keys, JSON.stringify(key)).toHaveLength(4);
      expect(new Set(keys.map(keySlot)).size, JSON.stringify(key)).toBe(1);
      // Key names are printable ASCII and bounded, whatever the user key was.
      for (const redisKey of keys) {
        expect(redisKey).toMatch(/^[\x21-\x7e]+$/);
        expect(redisKey.length).toBeLessThanOrEqual('kt:{}:window:fw'.length + MAX_ENCODED_KEY);
      }
    }
  });
});
