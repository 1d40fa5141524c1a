/**
 * The congested upstream (congested-upstream.ts) in a process of its own, so the latency a
 * gateway measures is the upstream's, not the event-loop delays of a test process that also runs
 * dozens of client loops. argv: capacity, latency ms. It prints its URL as a JSON line, then
 * answers stdin lines: `peak` (the most requests in flight so far) and `capacity N`.
 */
import { createInterface } from 'node:readline';
import { startCongestedUpstream } from './congested-upstream.js';

const upstream = await startCongestedUpstream({
  capacity: Number(process.argv[2]),
  latencyMs: Number(process.argv[3]),
});
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  const [command, value] = line.split(' ');
  if (command === 'capacity') upstream.setCapacity(Number(value));
  process.stdout.write(`${JSON.stringify(command === 'peak' ? upstream.peak() : 'ok')}\n`);
});
input.on('close', () => {
  void upstream.close().finally(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ url: upstream.url })}\n`);
