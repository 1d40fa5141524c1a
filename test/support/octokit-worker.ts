/**
 * Octokit with @octokit/plugin-throttling in a process of its own, for
 * test/bottleneck/octokit.test.ts: its throttle uses floodgate/bottleneck and one Redis connection
 * (argv[2] the port), so every process's Octokit shares GitHub's limits, as the plugin's clustering
 * is documented. On a line of stdin (JSON: the mock's url, and how many reads and writes) it sends
 * them all at once and answers one JSON line: the statuses, and the limits the plugin reported.
 */
import { createInterface } from 'node:readline';
import { Octokit } from '@octokit/core';
import { throttling } from '@octokit/plugin-throttling';
import Bottleneck from '../../src/bottleneck/index.js';

interface Order {
  url: string;
  reads: number;
  writes: number;
  /** Also ask the two paths that answer a limit once. */
  limited: boolean;
}

const port = Number(process.argv[2]);
const connection = new Bottleneck.IORedisConnection({ clientOptions: { host: '127.0.0.1', port } });
const limits: string[] = [];
const ThrottledOctokit = Octokit.plugin(throttling);
let octokit: InstanceType<typeof ThrottledOctokit> | undefined;

const input = createInterface({ input: process.stdin });
// The test ends stdin: the shared connection is what keeps the process alive.
input.on('close', () => {
  void connection.disconnect().finally(() => process.exit(0));
});
input.on('line', async (line) => {
  const order = JSON.parse(line) as Order;
  octokit ??= new ThrottledOctokit({
    baseUrl: order.url,
    auth: 'token-of-the-test',
    throttle: {
      Bottleneck: Bottleneck as never,
      connection: connection as never,
      id: 'octokit-fleet',
      onRateLimit: (retryAfter: number) => {
        limits.push(`primary ${retryAfter}`);
        return true;
      },
      onSecondaryRateLimit: (retryAfter: number) => {
        limits.push(`secondary ${retryAfter}`);
        return true;
      },
    },
  });
  const client = octokit;
  const requests = [
    ...Array.from({ length: order.reads }, (_, i) => client.request(`GET /repos/o/r/issues/${i}`)),
    // A write that notifies nobody: the plugin spaces it by its write limit alone (1 s).
    ...Array.from({ length: order.writes }, () => client.request('POST /repos/o/r/labels', { name: 'l' })),
    ...(order.limited
      ? [client.request('GET /limited/primary'), client.request('GET /limited/secondary')]
      : []),
  ];
  const statuses = (await Promise.allSettled(requests)).map((settled) =>
    settled.status === 'fulfilled' ? settled.value.status : String(settled.reason),
  );
  process.stdout.write(`${JSON.stringify({ statuses, limits: limits.splice(0) })}\n`);
});
process.stdout.write('ready\n');
