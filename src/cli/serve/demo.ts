/**
 * The demo API `floodgate serve` answers when no `--upstream` is given, so a newcomer sees the
 * limiter work at once: `curl -i localhost:8080/hello` a few times and watch the headers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config/schema.js';
import { adminUrl } from './admin.js';

const MAX_ECHO_BYTES = 64 * 1024;
const PUBLIC_ROUTES = ['GET /hello', 'GET /time', 'POST /echo'];
const LIMIT_HINT = 'Run curl -i several times and watch the RateLimit headers; past the limit you get a 429.';

type DemoHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * The demo's routes. `GET /` lists them, and /metrics and /healthz at the admin listener's own
 * address: they are never answered on the public port.
 */
export function createDemoHandler(admin: GatewayConfig['admin']): DemoHandler {
  const base = admin === undefined ? undefined : adminUrl(admin.host, admin.port);
  const index = {
    message: 'Floodgate demo API: every request here passes through the rate limiter first.',
    try:
      base === undefined ? PUBLIC_ROUTES : [...PUBLIC_ROUTES, `GET ${base}/metrics`, `GET ${base}/healthz`],
    hint:
      base === undefined
        ? `${LIMIT_HINT} The admin listener (/metrics, /healthz) is off (admin port 0).`
        : `${LIMIT_HINT} /metrics and /healthz are on the admin listener, ${base}, not on this port.`,
  };
  return function demoHandler(request, reply) {
    return answerDemo(request, reply, index);
  };
}

async function answerDemo(request: FastifyRequest, reply: FastifyReply, index: object): Promise<unknown> {
  const path = (request.raw.url ?? '/').split('?')[0];
  const decision = request.rateLimit;
  const quota =
    decision === undefined
      ? undefined
      : {
          rule: decision.rule,
          limit: decision.limit,
          remaining: decision.remaining,
          resetMs: decision.resetMs,
        };
  if (request.method === 'GET' && path === '/') {
    return { ...index, quota };
  }
  if (request.method === 'GET' && path === '/hello') return { hello: 'world', quota };
  if (request.method === 'GET' && path === '/time') return { now: new Date().toISOString(), quota };
  if (request.method === 'POST' && path === '/echo') {
    const body = await readBody(request);
    if (body === undefined) {
      return reply.code(413).send({ error: `the demo echoes at most ${MAX_ECHO_BYTES} bytes` });
    }
    reply.type(request.headers['content-type'] ?? 'application/octet-stream');
    return reply.send(body);
  }
  return reply.code(404).send({ error: `no demo route ${request.method} ${path}; try GET /` });
}

/** Reads the unparsed body (the gateway registers no body parsers), or undefined past the cap. */
async function readBody(request: FastifyRequest): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length;
    if (size > MAX_ECHO_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
