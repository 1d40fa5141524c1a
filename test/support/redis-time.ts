/**
 * The Redis server's clock, as the check script reads it (`TIME`, in whole milliseconds), and a
 * guard for tests whose exact counts hold only within one clock-aligned window.
 */
import type { Redis } from 'ioredis';

export async function redisTimeMs(client: Redis): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Runs `body` until one run starts and ends (by the server's clock) inside a single aligned
 * window of `windowMs`; a run that straddles a boundary is discarded and repeated.
 */
export async function withinOneWindow<T>(
  client: Redis,
  windowMs: number,
  body: (attempt: number) => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const before = await redisTimeMs(client);
    const result = await body(attempt);
    const after = await redisTimeMs(client);
    if (Math.floor(before / windowMs) === Math.floor(after / windowMs)) return result;
    if (attempt >= 3) throw new Error(`every attempt straddled a ${windowMs} ms window boundary`);
  }
}
