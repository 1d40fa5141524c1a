/**
 * A limiter in a process of its own, for test/calendar/thresholds-multiprocess.test.ts: on each
 * line of stdin (a JSON round) it makes `checks` checks of one key of a daily rule with
 * thresholds on the Redis at argv[2], all at once, and answers one JSON line with the
 * `threshold` events it heard.
 */
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { createLimiter, redisStore, type ThresholdEvent } from '../../src/index.js';

interface Round {
  prefix: string;
  key: string;
  checks: number;
  limit: number;
  thresholds: number[];
}

const client = new Redis(Number(process.argv[2]), '127.0.0.1');
createInterface({ input: process.stdin }).on('line', async (line) => {
  const round = JSON.parse(line) as Round;
  const limiter = createLimiter({
    store: redisStore({ client }),
    prefix: round.prefix,
    rules: {
      name: 'daily',
      algorithm: 'fixed-window',
      limit: round.limit,
      period: 'day',
      thresholds: round.thresholds,
    },
    timeout: '5s',
    denyCache: false,
  });
  const heard: ThresholdEvent[] = [];
  limiter.on('threshold', (event) => heard.push(event));
  await Promise.all(Array.from({ length: round.checks }, () => limiter.check(round.key)));
  await limiter.close();
  process.stdout.write(`${JSON.stringify(heard)}\n`);
});
process.stdin.on('end', () => {
  client.disconnect();
});
process.stdout.write('ready\n');
