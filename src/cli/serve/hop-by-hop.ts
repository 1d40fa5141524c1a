/**
 * Which headers cross the gateway: those that describe one connection (hop-by-hop, RFC 9110
 * §7.6.1) stay on their side, in both directions; the upstream's declared trailers go on to the
 * client once its body has ended.
 */
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';

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

/** Passes on the trailers the upstream declares (Trailer header), read once its body has ended. */
export function forwardTrailers(response: IncomingMessage, reply: FastifyReply): void {
  const declared = String(response.headers.trailer ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  for (const name of declared) {
    try {
      reply.trailer(name, (_reply, _payload, done) => done(null, response.trailers[name] ?? ''));
    } catch {
      // A name Fastify refuses as a trailer (a framing or routing header) is not passed on.
    }
  }
}
