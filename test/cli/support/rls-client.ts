/**
 * A gRPC client of Envoy's rate limit service and of the gRPC health checking protocol, built
 * from the package's .proto files with @grpc/proto-loader, as any client would be (nothing of
 * the server's code). Calls resolve with the response or with the error's status code.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as loader from '@grpc/proto-loader';
import { ROOT } from './cli.js';

const PROTO = join(ROOT, 'proto');

export interface RlsStatus {
  code: string;
  currentLimit?: { name?: string; requestsPerUnit: number; unit: string };
  limitRemaining?: number;
  durationUntilReset?: { seconds: number; nanos: number };
}

export interface RlsAnswer {
  overallCode: string;
  statuses: RlsStatus[];
  responseHeadersToAdd?: { key: string; value: string }[];
}

export type Descriptor = {
  entries: { key: string; value: string }[];
  hitsAddend?: { value: number };
  limit?: { requestsPerUnit: number; unit: string };
};

export interface RlsClient {
  shouldRateLimit(request: {
    domain: string;
    descriptors: Descriptor[];
    hitsAddend?: number;
  }): Promise<RlsAnswer | { error: number; details: string }>;
  /** Sends bytes that are no RateLimitRequest at all. */
  raw(bytes: Buffer): Promise<{ error: number } | 'answered'>;
  health(service: string): Promise<string | { error: number }>;
  close(): void;
}

/** A service constructor, found by its full name in what loadPackageDefinition returns. */
function serviceClient(loaded: unknown, name: string): typeof grpc.Client {
  let node = loaded;
  for (const part of name.split('.')) node = (node as Record<string, unknown>)[part];
  return node as typeof grpc.Client;
}

export function rlsClient(address: string): RlsClient {
  const definition = loader.loadSync(
    [join(PROTO, 'envoy/service/ratelimit/v3/rls.proto'), join(PROTO, 'grpc/health/v1/health.proto')],
    { includeDirs: [PROTO], enums: String, longs: Number, defaults: true },
  );
  const loaded = grpc.loadPackageDefinition(definition);
  const credentials = grpc.credentials.createInsecure();
  const Rls = serviceClient(loaded, 'envoy.service.ratelimit.v3.RateLimitService');
  const Health = serviceClient(loaded, 'grpc.health.v1.Health');
  const rls = new Rls(address, credentials);
  const health = new Health(address, credentials);
  const unary = <T>(
    client: grpc.Client,
    method: string,
    request: unknown,
  ): Promise<T | { error: number; details: string }> =>
    new Promise((resolve) => {
      (
        client as unknown as Record<
          string,
          (r: unknown, cb: (e: grpc.ServiceError | null, v: T) => void) => void
        >
      )[method]?.(request, (error, value) =>
        resolve(error ? { error: error.code, details: error.details } : value),
      );
    });
  return {
    shouldRateLimit: (request) => unary<RlsAnswer>(rls, 'ShouldRateLimit', request),
    raw: (bytes) =>
      new Promise((resolve) => {
        rls.makeUnaryRequest(
          '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
          () => bytes,
          (buffer: Buffer) => buffer,
          null,
          (error) => resolve(error ? { error: error.code } : 'answered'),
        );
      }),
    health: async (service) => {
      const answer = await unary<{ status: string }>(health, 'Check', { service });
      return 'error' in answer ? { error: answer.error } : answer.status;
    },
    close() {
      rls.close();
      health.close();
    },
  };
}
