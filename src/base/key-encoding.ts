/**
 * A user key's head, shared by every store: `<prefix>:{<key>}`, to which each rule appends
 * `:<rule>:<algorithm><suffix>`.
 *
 * The user's key is the Redis Cluster hash tag, so every rule of one key lands on one slot and
 * one script call. Characters outside a small safe set (including `{`, `}`, `%`, `#`, spaces,
 * control and non-ASCII characters) are percent-encoded, so a client cannot move its key to a
 * slot of its choosing by brace injection, nor write raw bytes into key names. Keys whose
 * encoding would exceed MAX_ENCODED_KEY characters become `#` + a SHA-256 digest, which bounds
 * Redis memory per key; `#` never appears in an encoded key, so the two forms cannot collide.
 */
import { describe } from '../describe.js';
import { base64url, sha256, utf8 } from './sha256.js';

export const MAX_ENCODED_KEY = 128;
const PREFIX = /^[A-Za-z0-9_.:@/+=~-]{1,64}$/;
const SAFE_KEY = /^[A-Za-z0-9_.:@/+=~-]+$/;
const SAFE_CHAR = /[A-Za-z0-9_.:@/+=~-]/;
const UTF16_DOMAIN = new Uint8Array([0xff]);

/** Encodes a user's key for use inside a Redis key name (and as its hash tag). */
export function encodeKey(key: string): string {
  if (key.length <= MAX_ENCODED_KEY && SAFE_KEY.test(key)) return key;
  // Lone surrogates cannot be UTF-8 encoded losslessly: digest their UTF-16 form instead, behind
  // a 0xFF byte (never found in UTF-8) so those bytes can never be some other key's UTF-8 bytes.
  if (!key.isWellFormed()) return digest(UTF16_DOMAIN, utf16le(key));
  let encoded = '';
  for (const char of key) {
    if (SAFE_CHAR.test(char)) {
      encoded += char;
    } else {
      encoded += percentEncoded(char.codePointAt(0) as number);
    }
    if (encoded.length > MAX_ENCODED_KEY) return digest(utf8(key));
  }
  return encoded;
}

/** `%XX` for each UTF-8 byte of a code point (the key is well-formed, so no lone surrogates). */
function percentEncoded(codePoint: number): string {
  if (codePoint < 0x80) return hexByte(codePoint);
  if (codePoint < 0x800) return hexByte(0xc0 | (codePoint >> 6)) + hexByte(0x80 | (codePoint & 63));
  const last = hexByte(0x80 | ((codePoint >> 6) & 63)) + hexByte(0x80 | (codePoint & 63));
  if (codePoint < 0x10000) return hexByte(0xe0 | (codePoint >> 12)) + last;
  return hexByte(0xf0 | (codePoint >> 18)) + hexByte(0x80 | ((codePoint >> 12) & 63)) + last;
}

function hexByte(byte: number): string {
  return `%${byte < 16 ? '0' : ''}${byte.toString(16).toUpperCase()}`;
}

function digest(...bytes: Uint8Array[]): string {
  return `#${base64url(sha256(...bytes))}`;
}

/** The UTF-16LE code units of `text`, lone surrogates included. */
function utf16le(text: string): Uint8Array {
  const out = new Uint8Array(text.length * 2);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    out[i * 2] = unit & 0xff;
    out[i * 2 + 1] = unit >> 8;
  }
  return out;
}

/** The part of every Redis key shared by all rules of one user key. */
export function keyHead(prefix: string, key: string): string {
  return headOf(prefix, encodeKey(key));
}

/** keyHead for a key already encoded by encodeKey. */
export function headOf(prefix: string, encoded: string): string {
  return `${prefix}:{${encoded}}`;
}

/** A head's prefix and encoded key, as headOf joined them (neither contains a brace). */
export function splitHead(head: string): { prefix: string; encoded: string } {
  const open = head.indexOf('{');
  if (open < 2 || head[open - 1] !== ':' || !head.endsWith('}')) {
    throw new TypeError(`key head: expected '<prefix>:{<encoded key>}', got ${describe(head)}`);
  }
  return { prefix: head.slice(0, open - 1), encoded: head.slice(open + 1, -1) };
}

/** Validates a limiter's `prefix` (default `'floodgate'`). */
export function resolvePrefix(prefix: unknown): string {
  const value = prefix ?? 'floodgate';
  if (typeof value !== 'string' || !PREFIX.test(value)) {
    throw new RangeError(
      `prefix: ${describe(value)} must be 1-64 characters of letters, digits and _ . : @ / + = ~ - (no braces: they would become the cluster hash tag)`,
    );
  }
  return value;
}
