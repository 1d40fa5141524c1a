/**
 * `POST /json` (on the admin listener): envoyproxy/ratelimit's debugging endpoint. The body is a
 * RateLimitRequest in JSON (camelCase or the proto's snake_case names), the answer the
 * RateLimitResponse in JSON (proto3 JSON mapping: camelCase, enum names, durations as "1.5s"),
 * with 200 when OK and 429 when OVER_LIMIT, as the reference service answers. Bodies are bounded.
 */
import type { IncomingMessage } from 'node:http';
import { InvalidRequest } from './request.js';
import type { RlsResponse, RlsService } from './service.js';

const MAX_BODY_BYTES = 1 << 20;

export interface JsonAnswer {
  status: number;
  body: string;
}

/** `service` is asked for the current generation's once the body is in, so a reload meanwhile is followed. */
export async function answerJson(
  req: IncomingMessage,
  service: () => RlsService | undefined,
): Promise<JsonAnswer> {
  const off = () => problem(404, 'the Envoy rate limit service is off (see --grpc-config)');
  if (service() === undefined) return off();
  let input: unknown;
  try {
    input = JSON.parse(await readBody(req));
  } catch (error) {
    return problem(400, error instanceof InvalidRequest ? error.message : 'the body is not JSON');
  }
  const current = service();
  if (current === undefined) return off();
  try {
    const response = await current.shouldRateLimit(input);
    return {
      status: response.overallCode === 'OVER_LIMIT' ? 429 : 200,
      body: JSON.stringify(toJson(response)),
    };
  } catch (error) {
    if (error instanceof InvalidRequest) return problem(400, error.message);
    throw error;
  }
}

function problem(status: number, error: string): JsonAnswer {
  return { status, body: JSON.stringify({ error }) };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new InvalidRequest(`the body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The proto3 JSON mapping of a response: durations become strings such as "59.5s". */
function toJson(response: RlsResponse) {
  return {
    ...response,
    statuses: response.statuses.map(({ durationUntilReset, ...status }) => ({
      ...status,
      ...(durationUntilReset === undefined
        ? {}
        : { durationUntilReset: `${durationUntilReset.seconds + durationUntilReset.nanos / 1e9}s` }),
    })),
  };
}
