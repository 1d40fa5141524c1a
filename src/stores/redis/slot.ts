/**
 * Redis Cluster hash slots, so that per-node concerns (the circuit breaker) can be kept per slot
 * without asking the client which node serves what: `CRC16-XMODEM(tag) mod 16384`, where the tag
 * is the text between the first `{` and the first `}` after it when non-empty, else the whole key.
 */

const TABLE = new Uint16Array(256);
for (let byte = 0; byte < 256; byte++) {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  TABLE[byte] = crc;
}

/** The cluster slot of a Redis key. */
export function hashSlot(key: string): number {
  const open = key.indexOf('{');
  let tag = key;
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) tag = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(tag, 'utf8'))
    crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc % 16384;
}
