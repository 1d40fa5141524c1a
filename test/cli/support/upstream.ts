/**
 * A real upstream for gateway tests: a node:http server that records what reached it and
 * answers with what the test asks for. `/hold/*` answers only when the test releases it, so a
 * test can keep a request in flight across a reload or a shutdown; `/stream` sends a first
 * chunk, then waits, to prove responses are streamed.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Upstream {
  readonly port: number;
  readonly url: string;
  readonly seen: Seen[];
  /** Resolves when a request has reached /hold/* (its body fully read). */
  held(): Promise<void>;
  /** Answers every request waiting on /hold/* and /stream. */
  release(): void;
  close(): Promise<void>;
}

export async function startUpstream(): Promise<Upstream> {
  const seen: Seen[] = [];
  let releases: (() => void)[] = [];
  let heldWaiters: (() => void)[] = [];
  let heldCount = 0;
  const server: Server = createServer(async (req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/base/stream')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first chunk;');
      await new Promise<void>((resolve) => releases.push(resolve));
      res.end('last chunk');
      return;
    }
    if (url.startsWith('/base/first-chunk')) {
      // Answers with the first chunk of the body while the client is still sending the rest.
      req.once('data', (chunk: Buffer) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`got: ${chunk.toString('utf8')}`);
        req.resume();
      });
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    seen.push({ method: req.method ?? '', url, headers: req.headers, body });
    if (url.startsWith('/base/hold')) {
      heldCount++;
      for (const wake of heldWaiters) wake();
      heldWaiters = [];
      await new Promise<void>((resolve) => releases.push(resolve));
    }
    res.writeHead(url.includes('created') ? 201 : 200, {
      'content-type': 'application/json',
      'x-upstream': 'yes',
      // Hop-by-hop: the gateway must not pass these on.
      connection: 'keep-alive, x-upstream-hop',
      'x-upstream-hop': 'secret',
      'keep-alive': 'timeout=5',
    });
    res.end(JSON.stringify({ method: req.method, url, body }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const release = () => {
    for (const wake of releases) wake();
    releases = [];
  };
  return {
    port: address.port,
    url: `http://127.0.0.1:${address.port}`,
    seen,
    held() {
      if (heldCount > 0) {
        heldCount--;
        return Promise.resolve();
      }
      return new Promise((resolve) => {
        heldWaiters.push(() => {
          heldCount--;
          resolve();
        });
      });
    },
    release,
    async close() {
      if (!server.listening) return;
      release();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
