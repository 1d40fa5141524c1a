/**
 * The streaming reverse proxy behind `floodgate serve --upstream URL`, on node:http alone:
 * method, path, query, headers and body go to the upstream as they arrive, and its response
 * comes back the same way. Hop-by-hop headers are dropped in both directions, X-Forwarded-For
 * is appended to, and an upstream that cannot answer becomes a 502 (or 504 on timeout).
 */
import {
  Agent,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request,
} from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1), plus any named in Connection. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export interface ProxyOptions {
  upstream: URL;
  /** Longest wait for the upstream's response headers, and longest silence while streaming. */
  timeoutMs: number;
  /** Called when the upstream could not answer: 'unavailable' (connection failed) or 'timeout'. */
  onUpstreamError?: (reason: 'unavailable' | 'timeout', error: Error) => void;
}

export interface Proxy {
  handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
  close(): void;
}

/** Drops hop-by-hop headers and those the Connection header names. */
export function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  return out;
}

export function createProxy(options: ProxyOptions): Proxy {
  const { upstream, timeoutMs } = options;
  const agent = new Agent({ keepAlive: true, maxSockets: 512 });
  const basePath = upstream.pathname.replace(/\/+$/, '');

  function handle(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const incoming = req.raw;
    const headers = endToEnd(incoming.headers);
    const client = incoming.socket.remoteAddress ?? '';
    const forwarded = incoming.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = forwarded ? `${forwarded}, ${client}` : client;
    headers['x-forwarded-proto'] ??= 'http';
    if (incoming.headers.host !== undefined) headers['x-forwarded-host'] ??= incoming.headers.host;
    headers.host = upstream.host;

    return new Promise((resolve) => {
      let settled = false;
      let clientGone = false;
      const finish = () => {
        if (!settled) {
          settled = true;
          resolve(reply);
        }
      };
      const outgoing = request({
        protocol: 'http:',
        hostname: upstream.hostname,
        port: upstream.port || 80,
        method: incoming.method,
        path: basePath + (incoming.url ?? '/'),
        headers,
        agent,
        timeout: timeoutMs,
      });

      const fail = (reason: 'unavailable' | 'timeout', error: Error) => {
        options.onUpstreamError?.(reason, error);
        if (reply.sent || reply.raw.headersSent) {
          // Mid-stream: the only honest signal left is to cut the connection.
          reply.raw.destroy(error);
          finish();
          return;
        }
        const status = reason === 'timeout' ? 504 : 502;
        reply
          .code(status)
          .header('cache-control', 'no-store')
          .type('application/problem+json')
          .send({
            type: 'about:blank',
            title: status === 504 ? 'Gateway Timeout' : 'Bad Gateway',
            status,
            detail:
              reason === 'timeout' ? 'the upstream did not answer in time' : 'the upstream is unavailable',
          });
        finish();
      };

      outgoing.on('timeout', () =>
        outgoing.destroy(Object.assign(new Error('upstream timeout'), { code: 'ETIMEDOUT' })),
      );
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        if (clientGone) return;
        fail(error.code === 'ETIMEDOUT' ? 'timeout' : 'unavailable', error);
      });
      outgoing.on('response', (response: IncomingMessage) => {
        reply.code(response.statusCode ?? 502);
        for (const [name, value] of Object.entries(endToEnd(response.headers))) {
          // The gateway's own headers (rate limits) win over the upstream's.
          if (value !== undefined && !reply.hasHeader(name)) reply.header(name, value);
        }
        response.on('error', (error) => reply.raw.destroy(error));
        reply.send(response);
        finish();
      });

      // The client went away before the response was done: stop the upstream work too.
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) {
          clientGone = true;
          outgoing.destroy();
          finish();
        }
      });
      incoming.pipe(outgoing);
    });
  }

  return {
    handle,
    close: () => agent.destroy(),
  };
}
