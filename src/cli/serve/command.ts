/**
 * `floodgate serve`: flags, `--check`, and start. One node:http server owns the listening socket
 * and every connection; it hands requests to the current gateway generation, which SIGHUP
 * replaces (reload.ts) without closing a connection. The admin and gRPC listeners live as long.
 * SIGTERM/SIGINT drain and stop (signals.ts).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { EXIT_OK, type Parsed, parseCommandArgs, RuntimeFailure, stringOption, UsageError } from '../args.js';
import { loadConfig, STORE_FLAGS, STORE_FLAGS_HELP } from '../config/load.js';
import type { GatewayConfig } from '../config/schema.js';
import { redactUrl } from '../redis.js';
import { adaptiveHolder } from './adaptive.js';
import { type AdminListener, startAdmin } from './admin.js';
import { configWarnings, describeConfig, summary } from './describe.js';
import { answerClientErrors, edgeServerOptions } from './edge.js';
import { type GrpcListener, startGrpc } from './envoy/grpc.js';
import type { Gateway } from './gateway.js';
import { createLogger, LOG_LEVELS, type Logger, type LogLevel } from './log.js';
import { gatewayMetrics } from './metrics.js';
import { startOtel } from './otel.js';
import { handleSignals } from './signals.js';
import { buildNamed, partsOf, type Running, type Shared } from './state.js';
import { openStore, type StoreHandle } from './store.js';

export const SERVE_HELP = `Usage: floodgate serve [options]

Runs a rate-limiting HTTP gateway. Allowed requests are forwarded to --upstream (a streaming
reverse proxy); limited ones get 429 with the standard headers. Without --upstream it serves a
small demo API. Every path of the public port is forwarded; GET /metrics (Prometheus),
GET /healthz and POST /json (Envoy rate limit service) are answered on a separate admin
listener. Requests are counted under the client address, and under an API key only when the
config's tiers.keys lists it. Routes, skips and costs match the normalized path (escapes, //,
., .. and case resolved); a path that cannot be normalized gets 400.

Options:
  --upstream URL            forward allowed requests to this http:// service (default: demo API)
  --host HOST               address to listen on (default 127.0.0.1)
  --port PORT               port to listen on (default 8080; 0 picks a free one)
  --admin-host HOST         address of the admin listener (/metrics, /healthz; default 127.0.0.1)
  --admin-port PORT         port of the admin listener (default 9477; 0 turns it off)
  --grpc-port PORT          serve Envoy's rate limit service (gRPC) on this port (default 8081 when
                            --grpc-config is given; 0 picks a free one)
  --grpc-config PATH        envoyproxy/ratelimit YAML config: a file or a directory of .yaml files
${STORE_FLAGS_HELP}
  --headers STYLE           draft-6 (default), draft-10, legacy, a comma list, or false
  --trust-proxy VALUE       trust the proxy headers (X-Forwarded-*, Forwarded) of peers: true, a hop
                            count, or addresses/CIDRs; others' are dropped and set afresh
  --api-key-header NAME     header of the API keys listed in tiers.keys (it must be tiers.header);
                            false keys every request by its client address
  --on-store-error POLICY   open (default: allow) or closed (deny) when the store fails
  --shadow                  evaluate and count every rule but never deny (floodgate_shadow_denied_total)
  --adaptive                an adaptive concurrency limit in front of the upstream: it follows the
                            upstream's latency and refuses what it cannot take at once (503), the
                            sheddable first (docs/adaptive.md)
  --priority-header NAME    request header with a request's criticality under --adaptive: critical,
                            standard (default) or sheddable; set it at a trusted edge
  --store-timeout DURATION  longest wait for the store per check (default 100ms)
  --upstream-timeout DUR    longest wait for an upstream connection, and longest silence from the
                            upstream: no byte taken of the body, none sent (default 30s; a slow
                            reader gets more, docs/gateway.md#the-upstream-timeout)
  --client-timeout DUR      longest a client may take over its request headers, and longest
                            silence in its body; then 408, connection closed (default 30s)
  --client-concurrency N    most requests one client address may have in flight upstream at once
                            (per process; default 64); past it 429
  --shutdown-timeout DUR    longest wait for in-flight requests on SIGTERM (default 10s)
  --log-level LEVEL         debug, info (default: one line per request), warn or error
  --check                   validate the configuration as start would, print it, and exit
  -h, --help                show this help

Environment: REDIS_URL (store), FLOODGATE_API_KEY_SECRET (HMAC secret for API keys in limiter keys),
OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_METRICS_EXPORTER (and the other OTEL_* variables): metrics
through OpenTelemetry too, with @opentelemetry/sdk-node installed.
Signals: SIGHUP reloads the config file without dropping connections; SIGTERM/SIGINT drain and exit 0.
Exit codes: 0 ok, 1 runtime failure (e.g. Redis unreachable, port in use), 2 usage or configuration error.
`;

const OPTIONS = {
  ...STORE_FLAGS,
  upstream: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'admin-host': { type: 'string' },
  'admin-port': { type: 'string' },
  'grpc-port': { type: 'string' },
  'grpc-config': { type: 'string' },
  headers: { type: 'string' },
  'trust-proxy': { type: 'string' },
  'api-key-header': { type: 'string' },
  'on-store-error': { type: 'string' },
  'store-timeout': { type: 'string' },
  'upstream-timeout': { type: 'string' },
  'client-timeout': { type: 'string' },
  'client-concurrency': { type: 'string' },
  'shutdown-timeout': { type: 'string' },
  'log-level': { type: 'string' },
  check: { type: 'boolean' },
  shadow: { type: 'boolean' },
  adaptive: { type: 'boolean' },
  'priority-header': { type: 'string' },
} as const;

export async function serveCommand(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs('serve', argv, OPTIONS, 0);
  if (parsed.values.help === true) {
    process.stdout.write(SERVE_HELP);
    return EXIT_OK;
  }
  const level = stringOption(parsed, 'log-level') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new UsageError(`--log-level: '${level}' is not one of ${LOG_LEVELS.join(', ')}`);
  }
  const config = await loadConfig(parsed);
  if (parsed.values.check === true) {
    await checkGateway(parsed, config);
    const warnings = configWarnings(config).map((line) => `${line}\n`);
    process.stdout.write(`${describeConfig(config)}\n${warnings.join('')}configuration ok\n`);
    return EXIT_OK;
  }
  const logger = createLogger(process.stdout, level as LogLevel);
  for (const warning of configWarnings(config)) logger.warn('config_warning', { detail: warning });
  const metrics = gatewayMetrics();
  const otel = await startOtel(process.env, logger);
  const running = await start(parsed, config, { logger, metrics, otel, adaptive: adaptiveHolder() });
  return running.done;
}

/** `--check`: builds the gateway as start would (on a memory store, listening nowhere), then drops it. */
async function checkGateway(parsed: Parsed, config: GatewayConfig): Promise<void> {
  const logger = createLogger(process.stderr, 'error');
  const metrics = gatewayMetrics();
  const store = await openStore(undefined, logger, metrics);
  const gateway = await buildNamed(parsed, { config, store, logger, metrics });
  await gateway.close();
}

async function start(
  parsed: Parsed,
  config: GatewayConfig,
  shared: Omit<Shared, 'apiKeySecret'>,
): Promise<{ done: Promise<number> }> {
  const all: Shared = { ...shared, apiKeySecret: process.env.FLOODGATE_API_KEY_SECRET || undefined };
  const store = await openStore(config.redis, all.logger, all.metrics);
  const gateway = await closingOnFailure([store], () => buildGeneration(parsed, config, store, all));
  const admin = await closingOnFailure([gateway, store], () => adminFor(config, all, () => running));
  const grpc = await closingOnFailure([gateway, admin, store], () => grpcFor(config, all, () => running));
  const server = createEdgeServer(config, all.logger, (req, res) => {
    if (running.draining) res.setHeader('connection', 'close');
    running.gateway.handle(req, res);
  });
  const running: Running = {
    parsed,
    shared: all,
    server,
    admin,
    grpc,
    config,
    store,
    gateway,
    retiring: new Set(),
    draining: false,
  };
  await closingOnFailure([gateway, admin, grpcClosing(grpc), store], () => listen(server, config));
  logListening(running);
  return { done: handleSignals(running) };
}

/** Runs `step`; if it throws, closes what was opened before it (in order), then rethrows. */
async function closingOnFailure<T>(
  opened: readonly ({ close(): Promise<void> } | undefined)[],
  step: () => Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    for (const part of opened) await part?.close();
    throw error;
  }
}

function buildGeneration(
  parsed: Parsed,
  config: GatewayConfig,
  store: StoreHandle,
  shared: Shared,
): Promise<Gateway> {
  return buildNamed(parsed, partsOf(config, store, shared));
}

async function adminFor(
  config: GatewayConfig,
  shared: Shared,
  running: () => Running,
): Promise<AdminListener | undefined> {
  if (config.admin === undefined) return undefined;
  return startAdmin({
    ...config.admin,
    logger: shared.logger,
    metrics: shared.metrics,
    store: () => running().store,
    rls: () => running().gateway.rls,
    top: (by, limit, fleet) => running().gateway.top(by, limit, fleet),
  });
}

/** The Envoy rate limit service's gRPC listener, when `grpc` is configured. */
async function grpcFor(
  config: GatewayConfig,
  shared: Shared,
  running: () => Running,
): Promise<GrpcListener | undefined> {
  if (config.grpc === undefined) return undefined;
  return startGrpc({
    host: config.host,
    port: config.grpc.port,
    logger: shared.logger,
    service: () => running().gateway.rls,
    healthy: async () => {
      const { draining, store } = running();
      if (draining) return false;
      return store.ping(1000).then(
        () => true,
        () => false,
      );
    },
  });
}

/** The gRPC listener as something closingOnFailure can close (at once). */
function grpcClosing(grpc: GrpcListener | undefined) {
  return grpc === undefined ? undefined : { close: () => grpc.close(0) };
}

/** The one server that owns the public socket and every connection, across generations. */
function createEdgeServer(
  config: GatewayConfig,
  logger: Logger,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  const server = createServer(edgeServerOptions(config.clientTimeoutMs), handle);
  answerClientErrors(server, logger);
  return server;
}

async function listen(server: Server, config: GatewayConfig): Promise<void> {
  try {
    server.listen(config.port, config.host);
    await once(server, 'listening');
  } catch (error) {
    throw new RuntimeFailure(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
  }
}

function logListening({ server, config, admin, grpc, store, shared }: Running): void {
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  shared.logger.info('listening', {
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    upstream: config.upstream === undefined ? 'demo' : redactUrl(config.upstream.href),
    admin: admin?.url ?? 'off',
    ...(grpc !== undefined ? { grpc: grpc.address } : {}),
    store: store.label,
    ...summary(config),
  });
}
