/**
 * Both ends of a gateway test at the byte level: an upstream that records the raw bytes it
 * receives and splits them into requests by their framing (Content-Length or chunked, as a
 * strict HTTP/1.1 server would), and a client that writes exact bytes and reads the answer.
 */
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface RawRequest {
  method: string;
  target: string;
  /** Lower-cased names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  body: string;
  /** Header lines after the last chunk, as received. */
  trailers: string;
}

export interface RawUpstream {
  readonly port: number;
  readonly url: string;
  /** Every byte received so far, all connections. */
  readonly raw: () => string;
  /** The requests parsed from those bytes. */
  readonly requests: RawRequest[];
  /** Bytes left over that do not (yet) form a whole request, per connection. */
  readonly partial: () => string[];
  reset(): void;
  close(): Promise<void>;
}

/** Answers a request: the raw response bytes, or undefined to stay silent. */
export type Responder = (request: RawRequest, socket: Socket) => string | undefined;

const OK: Responder = (request) =>
  request.method === 'HEAD'
    ? 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n'
    : 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok';

/** Parses one request from the start of `buffer`: the request and its length, or undefined if incomplete. */
export function parseRequest(buffer: string): { request: RawRequest; length: number } | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [line = '', ...fields] = buffer.slice(0, end).split('\r\n');
  const [method = '', target = ''] = line.split(' ');
  const headers: Record<string, string> = {};
  for (const field of fields) {
    const colon = field.indexOf(':');
    const name = field.slice(0, colon).trim().toLowerCase();
    const value = field.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  let at = end + 4;
  if (headers['transfer-encoding'] !== undefined) {
    let body = '';
    for (;;) {
      const lineEnd = buffer.indexOf('\r\n', at);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(buffer.slice(at, lineEnd).split(';')[0] ?? '', 16);
      if (Number.isNaN(size))
        throw new Error(`bad chunk size at ${at}: ${JSON.stringify(buffer.slice(at, at + 20))}`);
      at = lineEnd + 2;
      if (size === 0) {
        const trailerEnd = buffer.startsWith('\r\n', at) ? at : buffer.indexOf('\r\n\r\n', at);
        if (trailerEnd < 0) return undefined;
        const trailers = buffer.slice(at, trailerEnd);
        const length = trailerEnd + (trailerEnd === at ? 2 : 4);
        return { request: { method, target, headers, body, trailers }, length };
      }
      if (buffer.length < at + size + 2) return undefined;
      body += buffer.slice(at, at + size);
      at += size + 2;
    }
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buffer.length < at + length) return undefined;
  return {
    request: { method, target, headers, body: buffer.slice(at, at + length), trailers: '' },
    length: at + length,
  };
}

export async function startRawUpstream(respond: Responder = OK): Promise<RawUpstream> {
  let raw = '';
  const requests: RawRequest[] = [];
  const buffers = new Map<Socket, string>();
  const server: Server = createServer((socket) => {
    buffers.set(socket, '');
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      raw += chunk;
      let buffer = (buffers.get(socket) ?? '') + chunk;
      for (;;) {
        const parsed = parseRequest(buffer);
        if (parsed === undefined) break;
        buffer = buffer.slice(parsed.length);
        requests.push(parsed.request);
        const answer = respond(parsed.request, socket);
        if (answer !== undefined) socket.write(answer);
      }
      buffers.set(socket, buffer);
    });
    socket.on('error', () => {});
    socket.on('close', () => buffers.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    url: `http://127.0.0.1:${address.port}`,
    raw: () => raw,
    requests,
    partial: () => [...buffers.values()].filter(Boolean),
    reset() {
      raw = '';
      requests.length = 0;
    },
    async close() {
      for (const socket of buffers.keys()) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

export interface Exchange {
  /** Everything the gateway sent back, as latin1 text. */
  text: string;
  /** The status of the first response, or 0 if none. */
  status: number;
  /** Whether the gateway closed the connection. */
  closed: boolean;
  /** Milliseconds from the first byte sent to the end of reading. */
  ms: number;
}

/**
 * Writes `bytes` (a string, or pieces with pauses between them) to the gateway at `url` and
 * reads until the gateway closes the connection or `waitMs` passes.
 */
export async function exchange(
  url: string,
  bytes: string | (string | number)[],
  options: { waitMs?: number; localAddress?: string } = {},
): Promise<Exchange> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), localAddress: options.localAddress });
  socket.setEncoding('latin1');
  await once(socket, 'connect');
  const started = performance.now();
  let text = '';
  let closed = false;
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  socket.on('error', () => {});
  const ended = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true;
      resolve();
    }),
  );
  void (async () => {
    for (const piece of Array.isArray(bytes) ? bytes : [bytes]) {
      if (closed) return;
      if (typeof piece === 'number') await new Promise((resolve) => setTimeout(resolve, piece));
      else socket.write(piece, 'latin1');
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    ended,
    new Promise((resolve) => (timer = setTimeout(resolve, options.waitMs ?? 5000))),
  ]);
  clearTimeout(timer);
  const ms = performance.now() - started;
  socket.destroy();
  const status = /^HTTP\/1\.1 (\d{3})/.exec(text);
  return { text, status: status ? Number(status[1]) : 0, closed, ms };
}
