/**
 * The bytes a connection's peer has not acknowledged, read from Linux's /proc table, over a real
 * loopback connection: they pile up while the peer reads nothing and are gone once it has read
 * everything.
 */
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { unacknowledgedBytes } from '../../src/cli/serve/tcp-unacked.js';

const BODY = 8 * 1024 * 1024;
let peer: Socket | undefined;
const server = createServer((socket) => {
  peer = socket;
  socket.pause();
});

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
afterAll(() => server.close());

it('counts what a peer that reads nothing leaves unacknowledged, and nothing once it has read all', async () => {
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await once(client, 'connect');
  expect(await unacknowledgedBytes(client)).toBe(0);
  // More than both kernels' buffers hold: the rest waits in the client.
  client.write(Buffer.alloc(BODY, 97));
  await until(async () => ((await unacknowledgedBytes(client)) ?? 0) > 0);
  expect(client.writableLength).toBeGreaterThan(0);

  let read = 0;
  peer?.on('data', (chunk: Buffer) => {
    read += chunk.length;
  });
  peer?.resume();
  await until(async () => read === BODY && (await unacknowledgedBytes(client)) === 0);
  expect(read).toBe(BODY);
  client.destroy();
});

it('has no answer for a socket that is not connected', async () => {
  const client = connect({ port: 1, host: '127.0.0.1' });
  client.on('error', () => {});
  expect(await unacknowledgedBytes(client)).toBeUndefined();
  client.destroy();
});

async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
