import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { base64url, hmacSha256, sha256, utf8 } from '../../src/base/sha256.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('sha256 (no platform crypto)', () => {
  it('matches the FIPS 180-4 examples', () => {
    expect(hex(sha256(utf8('abc')))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hex(sha256(new Uint8Array(0)))).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    expect(hex(sha256(utf8('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')))).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('equals node:crypto on every length across block boundaries, split or whole', () => {
    for (let length = 0; length <= 200; length++) {
      const bytes = Uint8Array.from({ length }, (_, i) => (i * 131 + length) & 0xff);
      const expected = createHash('sha256').update(bytes).digest('hex');
      expect(hex(sha256(bytes))).toBe(expected);
      expect(hex(sha256(bytes.subarray(0, length >> 1), bytes.subarray(length >> 1)))).toBe(expected);
    }
  });

  it('equals node:crypto for HMAC and base64url on random input', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 150 }), fc.uint8Array({ maxLength: 300 }), (key, message) => {
        const expected = createHmac('sha256', key).update(message).digest('base64url');
        expect(base64url(hmacSha256(key, message))).toBe(expected);
        expect(base64url(message)).toBe(Buffer.from(message).toString('base64url'));
      }),
    );
  });
});
