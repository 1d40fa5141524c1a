/**
 * SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104) in plain TypeScript, synchronous and with no
 * platform import: key digests must be computed inline on the check path (Web Crypto's digest
 * is async only) and on runtimes without `node:crypto` (Workers, Deno, Bun, browsers).
 */

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = new Uint32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);
const BLOCK = 64;
const encoder = new TextEncoder();

/** The UTF-8 bytes of `text`. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Concatenates byte arrays. */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** The message schedule, reused by every call (the functions here never yield). */
const W = new Uint32Array(64);

/** Runs the compression function over every 64-byte block of `data` into `state`. */
function compress(state: Uint32Array, data: Uint8Array): void {
  for (let offset = 0; offset < data.length; offset += BLOCK) {
    for (let t = 0; t < 16; t++) {
      const i = offset + t * 4;
      W[t] =
        ((data[i] as number) << 24) |
        ((data[i + 1] as number) << 16) |
        ((data[i + 2] as number) << 8) |
        (data[i + 3] as number);
    }
    for (let t = 16; t < 64; t++) {
      const a = W[t - 15] as number;
      const b = W[t - 2] as number;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      W[t] = ((W[t - 16] as number) + s0 + (W[t - 7] as number) + s1) | 0;
    }
    let a = state[0] as number;
    let b = state[1] as number;
    let c = state[2] as number;
    let d = state[3] as number;
    let e = state[4] as number;
    let f = state[5] as number;
    let g = state[6] as number;
    let h = state[7] as number;
    for (let t = 0; t < 64; t++) {
      const t1 =
        (h +
          (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
          ((e & f) ^ (~e & g)) +
          (K[t] as number) +
          (W[t] as number)) |
        0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    state[0] = ((state[0] as number) + a) | 0;
    state[1] = ((state[1] as number) + b) | 0;
    state[2] = ((state[2] as number) + c) | 0;
    state[3] = ((state[3] as number) + d) | 0;
    state[4] = ((state[4] as number) + e) | 0;
    state[5] = ((state[5] as number) + f) | 0;
    state[6] = ((state[6] as number) + g) | 0;
    state[7] = ((state[7] as number) + h) | 0;
  }
}

/**
 * Finishes a hash whose `state` has absorbed `prefixLength` bytes in whole blocks: absorbs
 * `message`, the padding and the total bit length, and returns the digest.
 */
function finish(state: Uint32Array, prefixLength: number, message: Uint8Array): Uint8Array {
  // The message, the 0x80 byte, zero padding and the 64-bit bit length, in whole blocks.
  const padded = new Uint8Array(Math.ceil((message.length + 9) / BLOCK) * BLOCK);
  padded.set(message);
  padded[message.length] = 0x80;
  const bits = (prefixLength + message.length) * 8;
  const high = Math.floor(bits / 0x1_0000_0000);
  const end = padded.length;
  padded[end - 8] = high >>> 24;
  padded[end - 7] = high >>> 16;
  padded[end - 6] = high >>> 8;
  padded[end - 5] = high;
  padded[end - 4] = bits >>> 24;
  padded[end - 3] = bits >>> 16;
  padded[end - 2] = bits >>> 8;
  padded[end - 1] = bits;
  compress(state, padded);
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const word = state[i] as number;
    out[i * 4] = word >>> 24;
    out[i * 4 + 1] = word >>> 16;
    out[i * 4 + 2] = word >>> 8;
    out[i * 4 + 3] = word;
  }
  return out;
}

/** The SHA-256 digest (32 bytes) of the concatenation of `parts`. */
export function sha256(...parts: readonly Uint8Array[]): Uint8Array {
  const message = parts.length === 1 ? (parts[0] as Uint8Array) : concatBytes(...parts);
  return finish(INITIAL.slice(), 0, message);
}

function rotr(x: number, n: number): number {
  return (x >>> n) | (x << (32 - n));
}

/** An HMAC key's inner and outer states after its padded key block: computed once per key. */
interface HmacKey {
  readonly inner: Uint32Array;
  readonly outer: Uint32Array;
}

const hmacKeys = new WeakMap<Uint8Array, HmacKey>();

function hmacKey(key: Uint8Array): HmacKey {
  let states = hmacKeys.get(key);
  if (states === undefined) {
    const block = new Uint8Array(BLOCK);
    block.set(key.length > BLOCK ? sha256(key) : key);
    const inner = INITIAL.slice();
    const outer = INITIAL.slice();
    compress(
      inner,
      block.map((byte) => byte ^ 0x36),
    );
    compress(
      outer,
      block.map((byte) => byte ^ 0x5c),
    );
    states = { inner, outer };
    hmacKeys.set(key, states);
  }
  return states;
}

/** HMAC-SHA-256 of the concatenation of `parts` under `key` (RFC 2104). */
export function hmacSha256(key: Uint8Array, ...parts: readonly Uint8Array[]): Uint8Array {
  const { inner, outer } = hmacKey(key);
  const message = parts.length === 1 ? (parts[0] as Uint8Array) : concatBytes(...parts);
  return finish(outer.slice(), BLOCK, finish(inner.slice(), BLOCK, message));
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Base64url without padding (RFC 4648 §5), as Node's `digest('base64url')` writes it. */
export function base64url(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const a = bytes[i] as number;
    const b = bytes[i + 1];
    const c = bytes[i + 2];
    out += BASE64URL[a >> 2];
    out += BASE64URL[((a & 3) << 4) | ((b ?? 0) >> 4)];
    if (b !== undefined) out += BASE64URL[((b & 15) << 2) | ((c ?? 0) >> 6)];
    if (c !== undefined) out += BASE64URL[c & 63];
  }
  return out;
}
