/**
 * The demo API `floodgate serve` answers when no `--upstream` is given, so a newcomer sees the
 * limiter work at once: `curl -i localhost:8080/hello` a few times and watch the headers.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

const MAX_ECHO_BYTES = 64 * 1024;

export async function demoHandler(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
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
    return {
      message: 'Floodgate demo API: every request here passes through the rate limiter first.',
      try: ['GET /hello', 'GET /time', 'POST /echo', 'GET /metrics', 'GET /healthz'],
      hint: 'Run curl -i several times and watch the RateLimit headers; past the limit you get a 429.',
      quota,
    };
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
