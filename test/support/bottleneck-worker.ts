/**
 * A floodgate/bottleneck limiter in a process of its own, for test/bottleneck/cluster.test.ts: on
 * a line of stdin (JSON) it runs `jobs` jobs on a limiter with the shared `id` on the Redis at
 * argv[2] (datastore 'ioredis'), with the order's reservoir settings if any, and answers one JSON
 * line: each job's grant (its `scheduled` event), start and end, epoch ms.
 */
import { createInterface } from 'node:readline';
import Bottleneck from '../../src/bottleneck/index.js';

interface Order {
  id: string;
  jobs: number;
  maxConcurrent: number;
  minTime: number;
  jobMs: number;
  reservoir?: { reservoir: number; reservoirRefreshInterval: number; reservoirRefreshAmount: number };
}

const port = Number(process.argv[2]);
createInterface({ input: process.stdin }).on('line', async (line) => {
  const order = JSON.parse(line) as Order;
  const limiter = new Bottleneck({
    id: order.id,
    datastore: 'ioredis',
    clientOptions: { host: '127.0.0.1', port },
    maxConcurrent: order.maxConcurrent,
    minTime: order.minTime,
    ...order.reservoir,
  });
  await limiter.ready();
  const granted = new Map<string, number>();
  limiter.on('scheduled', (info: { options: { id: string } }) => granted.set(info.options.id, Date.now()));
  const runs = await Promise.all(
    Array.from({ length: order.jobs }, (_, i) =>
      limiter.schedule({ id: `job-${i}` }, async () => {
        const start = Date.now();
        await new Promise((resolve) => setTimeout(resolve, order.jobMs));
        return [granted.get(`job-${i}`), start, Date.now()];
      }),
    ),
  );
  await limiter.disconnect();
  process.stdout.write(`${JSON.stringify(runs)}\n`);
});
process.stdout.write('ready\n');
