/**
 * The gRPC listener of the Envoy rate limit service: `RateLimitService/ShouldRateLimit` and the
 * gRPC health checking protocol (`grpc.health.v1.Health/Check`), from the .proto files shipped
 * in the package (proto/). It outlives reloads: each call asks for the current generation's
 * service. A malformed request is INVALID_ARGUMENT; any other failure is INTERNAL, with its
 * detail in the log only.
 */
import { join } from 'node:path';
import type * as Grpc from '@grpc/grpc-js';
import { RuntimeFailure } from '../../args.js';
import { packageRoot } from '../../package-files.js';
import type { Logger } from '../log.js';
import { InvalidRequest } from './request.js';
import type { RlsResponse, RlsService } from './service.js';

export interface GrpcOptions {
  host: string;
  port: number;
  logger: Logger;
  /** The current generation's service (undefined once a reload dropped `grpc`). */
  service: () => RlsService | undefined;
  /** Whether the service can answer now (the store answers a ping). */
  healthy: () => Promise<boolean>;
}

export interface GrpcListener {
  /** `host:port` as bound. */
  readonly address: string;
  /** Lets calls under way finish for up to `graceMs`, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

export const RLS_SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';
/** Far above any real request (a few descriptors), so a client cannot make the process buffer much. */
const MAX_MESSAGE_BYTES = 1 << 20;
const PROTO_FILES = ['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'];

type Loaded = Record<string, unknown>;

/** Starts the listener; a port that cannot be bound is a RuntimeFailure naming the flag. */
export async function startGrpc(options: GrpcOptions): Promise<GrpcListener> {
  const { grpc, definitions } = await loadGrpc();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(serviceOf(definitions, RLS_SERVICE), {
    ShouldRateLimit: shouldRateLimit(grpc, options),
  });
  server.addService(serviceOf(definitions, 'grpc.health.v1.Health'), { Check: healthCheck(grpc, options) });
  const target = `${options.host.includes(':') ? `[${options.host}]` : options.host}:${options.port}`;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error === null ? resolve(bound) : reject(error),
    );
  }).catch((error: Error) => {
    throw new RuntimeFailure(`--grpc-port: cannot listen on ${target}: ${error.message}`);
  });
  return {
    address: `${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`,
    close: (graceMs) => closeServer(server, graceMs),
  };
}

async function loadGrpc() {
  let grpc: typeof Grpc;
  let loader: typeof import('@grpc/proto-loader');
  try {
    grpc = await import('@grpc/grpc-js');
    loader = await import('@grpc/proto-loader');
  } catch {
    throw new RuntimeFailure(
      "--grpc-port needs the '@grpc/grpc-js' and '@grpc/proto-loader' packages: npm install @grpc/grpc-js @grpc/proto-loader",
    );
  }
  const root = packageRoot();
  if (root === undefined) throw new RuntimeFailure('--grpc-port: cannot find the package’s proto/ directory');
  const protoDir = join(root, 'proto');
  const packageDefinition = loader.loadSync(
    PROTO_FILES.map((file) => join(protoDir, file)),
    { includeDirs: [protoDir], longs: Number, enums: String, defaults: false, oneofs: true },
  );
  return { grpc, definitions: grpc.loadPackageDefinition(packageDefinition) as Loaded };
}

function serviceOf(definitions: Loaded, name: string): Grpc.ServiceDefinition {
  let node: unknown = definitions;
  for (const part of name.split('.')) node = (node as Loaded)[part];
  return (node as { service: Grpc.ServiceDefinition }).service;
}

function shouldRateLimit(grpc: typeof Grpc, options: GrpcOptions): Grpc.handleUnaryCall<unknown, unknown> {
  return function ShouldRateLimit(call, callback) {
    // Any throw (even synchronous) becomes a status: nothing a client sends reaches the process.
    const service = options.service();
    if (service === undefined) {
      callback({
        code: grpc.status.UNAVAILABLE,
        details: 'the rate limit service was turned off by a reload',
      });
      return;
    }
    // Called in this turn, so the generation counts the call before a reload can retire it.
    new Promise<RlsResponse>((resolve) => resolve(service.shouldRateLimit(call.request))).then(
      (response) => callback(null, response),
      (error: unknown) => {
        if (error instanceof InvalidRequest) {
          callback({ code: grpc.status.INVALID_ARGUMENT, details: error.message });
          return;
        }
        options.logger.error('rls_error', { error });
        callback({ code: grpc.status.INTERNAL, details: 'internal error' });
      },
    );
  };
}

function healthCheck(grpc: typeof Grpc, options: GrpcOptions): Grpc.handleUnaryCall<unknown, unknown> {
  return function Check(call, callback) {
    const service = (call.request as { service?: unknown } | null)?.service ?? '';
    if (service !== '' && service !== RLS_SERVICE) {
      callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
      return;
    }
    options.healthy().then(
      (ok) => callback(null, { status: ok ? 'SERVING' : 'NOT_SERVING' }),
      () => callback(null, { status: 'NOT_SERVING' }),
    );
  };
}

function closeServer(server: Grpc.Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
