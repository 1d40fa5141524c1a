/**
 * Redis Cluster's key → slot mapping, restated for tests: CRC16-XMODEM (polynomial 0x1021,
 * initial value 0, no reflection) of the key's hash tag, modulo 16384. The hash tag is the text
 * between the first `{` and the first `}` after it, when that text is non-empty; otherwise the
 * whole key is hashed.
 */

export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = (crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1) & 0xffff;
  }
  return crc;
}

/** The bytes of `key` that Redis Cluster hashes. */
export function hashTag(key: string | Uint8Array): Buffer {
  const bytes = Buffer.from(key as string);
  const open = bytes.indexOf(0x7b);
  if (open === -1) return bytes;
  const close = bytes.indexOf(0x7d, open + 1);
  if (close === -1 || close === open + 1) return bytes;
  return bytes.subarray(open + 1, close);
}

export function keySlot(key: string | Uint8Array): number {
  return crc16(hashTag(key)) % 16384;
}
