/**
 * `floodgate serve` at the HTTP layer, as a hostile client would try it, with raw sockets on
 * both sides: the upstream records the bytes it receives, so each test asserts exactly which
 * requests reached it. Request smuggling, malformed framings, forged proxy headers,
 * absolute-form and asterisk-form targets, timeouts on both sides, oversized headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from './support/cli.js';
import { exchange, type RawUpstream, startRawUpstream } from './support/raw-http.js';

interface Gateway {
  cli: RunningCli;
  url: string;
}

const started: Gateway[] = [];
async function startGateway(args: string[]): Promise<Gateway> {
  const cli = startCli(['serve', '--port', '0', '--limit', '100000/1m', ...args]);
  const listening = await cli.waitForLog((line) => line.event === 'listening', 15_000);
  const gateway = { cli, url: listening.url as string };
  started.push(gateway);
  return gateway;
}

let upstream: RawUpstream;
let gateway: Gateway;

beforeAll(async () => {
  upstream = await startRawUpstream();
  gateway = await startGateway(['--upstream', `${upstream.url}/api`]);
});

afterAll(async () => {
  for (const each of started) each.cli.kill();
  await Promise.all(started.map((each) => each.cli.exited));
  await upstream?.close();
});

const METHODS = ['GET', 'HEAD', 'DELETE', 'OPTIONS', 'POST', 'PUT', 'PATCH'];
const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nHost: evil\r\nX-S: 1\r\n\r\n';

/** Each framing: the bytes after the request line, and the body the upstream must get. */
const FRAMINGS: Record<string, { bytes: string; body: string; target?: string }> = {
  none: { bytes: 'Host: a\r\nConnection: close\r\n\r\n', body: '' },
  'content-length': {
    bytes: 'Host: a\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello',
    body: 'hello',
  },
  chunked: {
    bytes: 'Host: a\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    body: 'hello',
  },
  'chunked with trailers': {
    bytes:
      'Host: a\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n',
    body: 'hello',
  },
  // The bytes from the issue: a chunked body that is itself a request.
  smuggling: {
    bytes: `Host: a\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2e\r\n${SMUGGLED}\r\n0\r\n\r\n`,
    body: SMUGGLED,
  },
};

describe('floodgate serve: exactly one upstream request per client request, whatever the framing', () => {
  for (const method of METHODS) {
    for (const [framing, { bytes, body }] of Object.entries(FRAMINGS)) {
      it(`regression: ${method} with ${framing === 'none' ? 'no body' : framing} reaches the upstream as one framed request`, async () => {
        upstream.reset();
        const answer = await exchange(gateway.url, `${method} /m HTTP/1.1\r\n${bytes}`);
        expect(answer.status).toBe(200);
        expect(upstream.requests).toHaveLength(1);
        expect(upstream.partial()).toEqual([]);
        const [seen] = upstream.requests;
        expect(seen).toMatchObject({ method, target: '/api/m', body });
        // Never a request line for the smuggled request outside the body's framing.
        expect(upstream.requests.map((request) => request.target)).not.toContain('/smuggled');
        if (body !== '') {
          expect(seen?.headers['content-length'] ?? seen?.headers['transfer-encoding']).toBeDefined();
        }
      });
    }
  }
});

/** Framings node:http refuses; none may reach the upstream. */
const MALFORMED: Record<string, string> = {
  'Content-Length and Transfer-Encoding': 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'two different Content-Lengths': 'Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!',
  'a Content-Length that is not a number': 'Content-Length: abc\r\n\r\n',
  'a negative Content-Length': 'Content-Length: -1\r\n\r\n',
  'a Content-Length list': 'Content-Length: 5, 6\r\n\r\nhello!',
  'a Content-Length with a sign': 'Content-Length: +5\r\n\r\nhello',
  'Transfer-Encoding other than chunked last': 'Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n',
  'Transfer-Encoding identity': 'Transfer-Encoding: identity\r\n\r\nhello',
  'an unknown Transfer-Encoding': 'Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n',
  'a space before the colon of Transfer-Encoding': 'Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n',
  'Transfer-Encoding folded onto a second line': 'Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n',
  'a chunk size that is not hex': 'Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n',
  'a chunk size past 64 bits': 'Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\nhello\r\n0\r\n\r\n',
  'a chunk longer than its size': 'Transfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n',
  'a chunk size with a space': 'Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n',
  'bare LF line endings in the body': 'Transfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n',
  'a header name with a space': 'Bad Name: x\r\nContent-Length: 0\r\n\r\n',
  'a NUL in a header value': 'X-A: a\u0000b\r\nContent-Length: 0\r\n\r\n',
  'a bare CR in a header': 'X-A: a\rb\r\nContent-Length: 0\r\n\r\n',
};

describe('floodgate serve: malformed framings get 400 and never reach the upstream', () => {
  for (const [name, rest] of Object.entries(MALFORMED)) {
    it(`regression: ${name}`, async () => {
      upstream.reset();
      const answer = await exchange(gateway.url, `POST /m HTTP/1.1\r\nHost: a\r\n${rest}`);
      expect(answer.status).toBe(400);
      expect(answer.closed).toBe(true);
      expect(upstream.requests).toEqual([]);
    });
  }
});
