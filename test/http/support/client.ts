/**
 * Client-side helpers: requests over real sockets with fetch, raw HTTP/1.1 for what fetch
 * refuses to send (repeated header lines, raw bytes), and readers that parse the rate-limit
 * headers with the `structured-headers` RFC 9651 parser.
 */
import { createConnection } from 'node:net';
import { type Item, parseItem, parseList } from 'structured-headers';
import { expect } from 'vitest';

export interface RawResponse {
  status: number;
  /** Header lines as received, names lowercased, repeated lines kept. */
  headers: [string, string][];
  body: string;
  get(name: string): string | undefined;
}

/**
 * Sends `head` (request line and header lines, CRLF-separated, without the final blank line)
 * over a fresh socket with `Connection: close` and reads the whole response.
 */
export function rawRequest(port: number, head: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    socket.on('connect', () => {
      socket.write(
        Buffer.concat([
          typeof head === 'string' ? Buffer.from(head, 'latin1') : head,
          Buffer.from('\r\nConnection: close\r\n\r\n'),
        ]),
      );
    });
    socket.on('data', (chunk) => chunks.push(chunk));
    let failure: Error | undefined;
    // A server that refuses a request may reset the connection while we still write: what it
    // answered before that is the response.
    socket.on('error', (error) => {
      failure = error;
    });
    socket.on('close', () => {
      if (chunks.length === 0) {
        reject(failure ?? new Error('connection closed without a response'));
        return;
      }
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, split < 0 ? text.length : split).split('\r\n');
      const status = Number((lines[0] ?? '').split(' ')[1]);
      const headers = lines.slice(1).map((line): [string, string] => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
      });
      let body = split < 0 ? '' : text.slice(split + 4);
      if (headers.some(([name, value]) => name === 'transfer-encoding' && value === 'chunked')) {
        body = dechunk(body);
      }
      resolve({
        status,
        headers,
        body,
        get: (name) => {
          const values = headers.filter(([key]) => key === name.toLowerCase()).map(([, value]) => value);
          return values.length === 0 ? undefined : values.join(', ');
        },
      });
    });
  });
}

function dechunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const end = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, end), 16);
    if (!(size > 0)) return out;
    out += rest.slice(end + 2, end + 2 + size);
    rest = rest.slice(end + 2 + size + 2);
  }
}

/** A header that must be present. */
export function header(response: { headers: Headers } | RawResponse, name: string): string {
  const value = 'get' in response ? response.get(name) : response.headers.get(name);
  expect(value, `header ${name}`).toBeDefined();
  expect(value, `header ${name}`).not.toBeNull();
  return value as string;
}

/** A draft-6 single-valued field, parsed as an RFC 9651 Integer item. */
export function integerField(response: { headers: Headers } | RawResponse, name: string): number {
  const [value, parameters] = parseItem(header(response, name)) as Item;
  expect(typeof value, `${name} is an Integer`).toBe('number');
  expect(Number.isInteger(value), `${name} is an Integer`).toBe(true);
  expect(parameters.size).toBe(0);
  return value as number;
}

export interface PolicyItem {
  name: string | number;
  params: Record<string, unknown>;
}

/** A list field (RateLimit-Policy, RateLimit), parsed with the RFC 9651 parser. */
export function listField(response: { headers: Headers } | RawResponse, name: string): PolicyItem[] {
  return parseList(header(response, name)).map((member) => {
    const [value, parameters] = member as Item;
    return { name: value as string | number, params: Object.fromEntries(parameters) };
  });
}

/** Retry-After as RFC 9110 delay-seconds: digits only. */
export function retryAfter(response: { headers: Headers } | RawResponse): number {
  const value = header(response, 'retry-after');
  expect(value).toMatch(/^[0-9]+$/);
  return Number(value);
}

/** Names of all rate-limit related headers present on a fetch response. */
export function rateLimitHeaderNames(response: Response): string[] {
  return [...response.headers.keys()].filter((name) => /ratelimit|retry-after/i.test(name));
}
