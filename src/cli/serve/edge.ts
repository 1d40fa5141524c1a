/**
 * The listening server's defences, before any request reaches a gateway generation: a client
 * may take at most `--client-timeout` to send its request headers, headers past node's limit
 * get 431, and every request node:http cannot parse (a malformed framing among them) gets a
 * 400, all as problem+json on a connection that is then closed, never forwarded.
 */
import type { Server, ServerOptions, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROBLEM_CONTENT_TYPE } from '../../internal.js';
import type { Logger } from './log.js';

/** The server options that bound how long a client may take over its request headers. */
export function edgeServerOptions(clientTimeoutMs: number): ServerOptions {
  return {
    headersTimeout: clientTimeoutMs,
    // Bodies are bounded by silence (in the proxy), not by a total time: uploads may be long.
    requestTimeout: 0,
    // node checks the headers timeout on this interval: often enough for short timeouts.
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(clientTimeoutMs / 4))),
  };
}

const ANSWERS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout'],
};

/** The connection's latest response, kept on the socket (a property, cheaper than a WeakMap per request). */
const RESPONSE = Symbol('floodgate.response');
type Tracked = Duplex & { [RESPONSE]?: ServerResponse };

/** Answers the requests node:http refuses (400, 408 or 431) without corrupting a response in flight. */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('request', (req, res: ServerResponse) => {
    (req.socket as Tracked)[RESPONSE] = res;
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    logger.log('debug', 'client_error', { error });
    const res = (socket as Tracked)[RESPONSE];
    // A response already under way cannot be followed by another: cut the connection instead.
    if (!socket.writable || (res?.headersSent && !res.writableFinished)) {
      socket.destroy();
      return;
    }
    const [status, title] = ANSWERS[error.code ?? ''] ?? [400, 'Bad Request'];
    const body = JSON.stringify({ type: 'about:blank', title, status });
    socket.end(
      `HTTP/1.1 ${status} ${title}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
