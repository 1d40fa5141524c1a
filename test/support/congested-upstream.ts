/**
 * A real upstream (node:http) that slows down past its capacity: each request takes
 * `latencyMs × max(1, in flight / capacity)`, as a service whose queue grows when offered more
 * than it can serve. `setCapacity` changes what it can take mid-run.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface CongestedUpstream {
  readonly url: string;
  readonly inFlight: () => number;
  /** The most requests it had in flight at once. */
  readonly peak: () => number;
  setCapacity(capacity: number): void;
  close(): Promise<void>;
}

export async function startCongestedUpstream(options: {
  capacity: number;
  latencyMs: number;
}): Promise<CongestedUpstream> {
  let capacity = options.capacity;
  let inFlight = 0;
  let peak = 0;
  const server: Server = createServer((req, res) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    const delay = options.latencyMs * Math.max(1, inFlight / capacity);
    req.resume();
    setTimeout(() => {
      inFlight--;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    }, delay);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    inFlight: () => inFlight,
    peak: () => peak,
    setCapacity(next) {
      capacity = next;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** The upstream of another process (congested-upstream-worker.ts), asked over its stdin. */
export interface CongestedUpstreamProcess {
  readonly url: string;
  peak(): Promise<number>;
  setCapacity(capacity: number): Promise<void>;
  close(): Promise<void>;
}

export async function startCongestedUpstreamProcess(options: {
  capacity: number;
  latencyMs: number;
}): Promise<CongestedUpstreamProcess> {
  const worker = fileURLToPath(new URL('./congested-upstream-worker.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', worker, String(options.capacity), String(options.latencyMs)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const read = async () => JSON.parse((await lines.next()).value as string) as unknown;
  const { url } = (await read()) as { url: string };
  const ask = (line: string) => {
    child.stdin.write(`${line}\n`);
    return read();
  };
  return {
    url,
    peak: async () => Number(await ask('peak')),
    async setCapacity(capacity) {
      await ask(`capacity ${capacity}`);
    },
    async close() {
      child.stdin.end();
      await once(child, 'exit');
    },
  };
}
