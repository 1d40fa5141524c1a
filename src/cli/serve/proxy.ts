/**
 * The streaming reverse proxy behind `floodgate serve --upstream URL`, on node:http alone:
 * method, path, query, headers and body go to the upstream as they arrive, and its response
 * (trailers included) comes back the same way. A request body is always forwarded framed
 * (Content-Length or chunked), so the upstream reads exactly one request per client request.
 * Hop-by-hop headers are dropped in both directions and the proxy headers are the gateway's
 * (forwarded.ts). No client holds upstream capacity from the others: a cap on its requests in
 * flight, a bounded wait for an upstream connection, and idle timeouts on both sides.
 */
import { Agent, type ClientRequest, type IncomingMessage, request } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { METHODS } from '../config/schema.js';
import { createPeerTrust, setForwarded } from './forwarded.js';
import { endToEnd, forwardTrailers } from './hop-by-hop.js';
import { idleTimer, sendProblem } from './reply.js';
import { createClientSlots } from './slots.js';
import { originForm } from './target.js';
import { createProgressWatch } from './upstream-progress.js';

/** Upstream connections per gateway process; the per-client cap keeps any one client to a share. */
const MAX_SOCKETS = 512;

export type UpstreamFailure = 'unavailable' | 'timeout' | 'saturated';

export interface ProxyOptions {
  upstream: URL;
  /** Longest wait for an upstream connection, between signs of progress before its response (see upstream-progress.ts), and between its response's chunks. */
  timeoutMs: number;
  /** Longest silence from a client while its request body is forwarded. */
  clientTimeoutMs: number;
  /** Most requests one client address may have in flight upstream. */
  clientConcurrency: number;
  trustProxy: boolean | number | string;
  /** Called when the upstream could not answer: connection failed, timed out, or none free in time. */
  onUpstreamError?: (reason: UpstreamFailure, error: Error) => void;
}

export interface Proxy {
  /** Settles once the reply is done (it adopts the reply, which Fastify makes awaitable). */
  handle(request: FastifyRequest, reply: FastifyReply): Promise<unknown>;
  close(): void;
}

export function createProxy(options: ProxyOptions): Proxy {
  const { upstream, timeoutMs } = options;
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  const basePath = upstream.pathname.replace(/\/+$/, '');
  const isTrustedPeer = createPeerTrust(options.trustProxy);
  const slots = createClientSlots(options.clientConcurrency);

  function handle(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const incoming = req.raw;
    // node:http has already refused every malformed framing; what is left is chunked or a length.
    const chunked = incoming.headers['transfer-encoding'] !== undefined;
    const hasBody = chunked || Number(incoming.headers['content-length'] ?? 0) > 0;
    const target = originForm(incoming.url ?? '/');
    if (target === '*') {
      // Asterisk-form is about the server itself: the gateway answers it, never the upstream.
      if (req.method === 'OPTIONS') reply.code(204).header('allow', METHODS.join(', ')).send();
      else sendProblem(reply, 400, 'Bad Request', 'the target * is only for OPTIONS', hasBody);
      return Promise.resolve(reply);
    }
    if (target === undefined) {
      sendProblem(reply, 400, 'Bad Request', 'the request target is not a valid URL', hasBody);
      return Promise.resolve(reply);
    }
    const release = slots.acquire(req.ip);
    if (release === undefined) {
      reply.header('retry-after', '1');
      sendProblem(
        reply,
        429,
        'Too Many Requests',
        'too many requests from this client in flight at once',
        hasBody,
      );
      return Promise.resolve(reply);
    }

    const headers = endToEnd(incoming.headers);
    if (chunked) headers['transfer-encoding'] = 'chunked';
    setForwarded(incoming, headers, isTrustedPeer(incoming.socket.remoteAddress ?? ''));
    headers.host = upstream.host;

    return new Promise<unknown>((resolve) => {
      // Set once the exchange is over (answered, failed or cut); the timers stop then.
      let over = false;
      let response: IncomingMessage | undefined;
      const stop = () => {
        over = true;
        connectTimer.clear();
        clientTimer.clear();
        lookTimer.clear();
        upstreamTimer.clear();
        resolve(reply);
      };
      const outgoing: ClientRequest = request({
        protocol: 'http:',
        hostname: upstream.hostname,
        port: upstream.port || 80,
        method: incoming.method,
        path: basePath + target,
        headers,
        agent,
      });

      const fail = (reason: UpstreamFailure, error: Error) => {
        if (over) return;
        options.onUpstreamError?.(reason, error);
        outgoing.destroy();
        if (response !== undefined || reply.raw.headersSent) {
          // Mid-stream: the only honest signal left is to cut the connection.
          reply.raw.destroy(error);
        } else {
          const [status, title, detail] =
            reason === 'timeout'
              ? [504, 'Gateway Timeout', 'the upstream did not answer in time']
              : reason === 'saturated'
                ? [503, 'Service Unavailable', 'no upstream connection became free in time']
                : [502, 'Bad Gateway', 'the upstream is unavailable'];
          sendProblem(reply, status, title, detail, hasBody && !incoming.complete);
        }
        stop();
      };
      const timeout = (message: string) => Object.assign(new Error(message), { code: 'ETIMEDOUT' });

      // No socket (or no connection) within the timeout: the pool is full or the upstream unreachable.
      const connectTimer = idleTimer(timeoutMs, () =>
        outgoing.socket === null || outgoing.socket === undefined
          ? fail('saturated', timeout('no free upstream connection'))
          : fail('timeout', timeout('upstream connect timeout')),
      );
      // Before its response, the upstream owes the gateway the body's taking or its answer: the
      // gateway looks at its connection four times per timeout (upstream-progress.ts).
      const progress = createProgressWatch(timeoutMs);
      const lookTimer = idleTimer(Math.max(1, Math.floor(timeoutMs / 4)), () => {
        const socket = outgoing.socket;
        if (socket === null || response !== undefined) return;
        void progress.look(socket).then((verdict) => {
          if (over || response !== undefined || verdict === 'stale') return;
          if (verdict === 'silent') fail('timeout', timeout('upstream timeout'));
          else lookTimer.arm();
        });
      });
      const waitOnUpstream = () => {
        progress.begin();
        lookTimer.arm();
      };
      const upstreamTook = () => {
        progress.end();
        lookTimer.clear();
      };
      // Silence between the chunks of its response. A response paused because the client reads
      // slowly is the client's pace, not the upstream's silence.
      const upstreamTimer = idleTimer(timeoutMs, () => {
        // A response read whole is the client's to take at its own pace.
        if (response?.readableEnded) return;
        if (response?.readableFlowing === false) upstreamTimer.arm();
        else fail('timeout', timeout('upstream timeout'));
      });
      const clientTimer = idleTimer(options.clientTimeoutMs, () => {
        if (over) return;
        outgoing.destroy();
        if (response !== undefined || reply.raw.headersSent) reply.raw.destroy();
        else
          sendProblem(
            reply,
            408,
            'Request Timeout',
            'the client was silent while sending its request body',
            true,
          );
        stop();
      });
      connectTimer.arm();

      const upstreamAlive = () => {
        if (response !== undefined) upstreamTimer.arm();
      };
      let connected = false;
      outgoing.on('socket', (socket) => {
        const onConnected = () => {
          if (over) return;
          connected = true;
          connectTimer.clear();
          progress.connected(socket);
          // Body written before the connection and not yet taken: the upstream's turn from now.
          if (outgoing.writableNeedDrain) waitOnUpstream();
          // Any byte from the upstream is a sign of life (the response is read from this socket).
          socket.on('data', upstreamAlive);
          outgoing.once('close', () => socket.off('data', upstreamAlive));
        };
        if (socket.connecting) socket.once('connect', onConnected);
        else onConnected();
      });
      // Until a connection is there, node:http holds what is written (with the head, in one write).
      if (hasBody) pumpBody();
      else outgoing.end();
      // The request is whole at the upstream: now it is the upstream's turn to answer.
      outgoing.on('finish', () => {
        if (!over && response === undefined) waitOnUpstream();
      });

      function pumpBody(): void {
        clientTimer.arm();
        incoming.on('data', (chunk: Buffer) => {
          clientTimer.arm();
          if (!outgoing.write(chunk)) {
            // The upstream is taking the body slowly: its pace, not the client's silence.
            incoming.pause();
            clientTimer.clear();
            // Before the connection, the wait for it is timed (connectTimer).
            if (connected && response === undefined) waitOnUpstream();
            outgoing.once('drain', () => {
              if (over) return;
              upstreamTook();
              clientTimer.arm();
              incoming.resume();
            });
          }
        });
        incoming.on('end', () => {
          clientTimer.clear();
          outgoing.end();
        });
      }

      outgoing.on('error', (error: NodeJS.ErrnoException) => fail('unavailable', error));
      outgoing.on('response', (upstreamResponse: IncomingMessage) => {
        if (over) return;
        response = upstreamResponse;
        upstreamTook();
        upstreamTimer.arm();
        reply.code(upstreamResponse.statusCode ?? 502);
        for (const [name, value] of Object.entries(endToEnd(upstreamResponse.headers))) {
          // The gateway's own headers (rate limits) win over the upstream's.
          if (value !== undefined && !reply.hasHeader(name)) reply.header(name, value);
        }
        forwardTrailers(upstreamResponse, reply);
        upstreamResponse.on('error', (error) => reply.raw.destroy(error));
        reply.send(upstreamResponse);
        resolve(reply);
      });

      reply.raw.once('close', () => {
        // The client went away before the response was done: stop the upstream work too.
        if (!reply.raw.writableFinished) outgoing.destroy();
        stop();
        release();
      });
    });
  }

  return {
    handle,
    close: () => agent.destroy(),
  };
}
