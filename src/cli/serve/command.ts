/**
 * `floodgate serve`: the gateway's lifecycle. One node:http server owns the listening socket and
 * every connection; it hands requests to the current gateway generation. SIGHUP builds a new
 * generation from the re-read configuration and swaps it in (no connection is closed; the old
 * one finishes its requests, then closes). SIGTERM/SIGINT stop accepting, let in-flight requests
 * finish (up to the shutdown timeout), then exit 0.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { formatDuration } from '../../internal.js';
import {
  EXIT_FAILURE,
  EXIT_OK,
  type Parsed,
  parseCommandArgs,
  RuntimeFailure,
  stringOption,
  UsageError,
} from '../args.js';
import { ConfigError } from '../config/check.js';
import { loadConfig, STORE_FLAGS, STORE_FLAGS_HELP } from '../config/load.js';
import type { GatewayConfig } from '../config/schema.js';
import { redactUrl } from '../redis.js';
import { type AdminListener, startAdmin } from './admin.js';
import { configWarnings, describeConfig, summary } from './describe.js';
import { answerClientErrors, edgeServerOptions } from './edge.js';
import { type GrpcListener, startGrpc } from './envoy/grpc.js';
import { buildGateway, type Gateway, type GatewayParts } from './gateway.js';
import { createLogger, LOG_LEVELS, type Logger, type LogLevel } from './log.js';
import { type GatewayMetrics, gatewayMetrics } from './metrics.js';
import { openStore, type StoreHandle, sameTarget } from './store.js';

export const SERVE_HELP = `Usage: floodgate serve [options]

Runs a rate-limiting HTTP gateway. Allowed requests are forwarded to --upstream (a streaming
reverse proxy); limited ones get 429 with the standard headers. Without --upstream it serves a
small demo API. Every path of the public port is forwarded; GET /metrics (Prometheus) and
GET /healthz (and POST /json of the Envoy rate limit service) are answered on a separate admin listener. Requests are counted under the client
address, and under an API key only when the config's tiers.keys lists it. Routes, skips and
costs match the normalized path (escapes, //, ., .. and case resolved); a path that cannot be
normalized gets 400.

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
  --store-timeout DURATION  longest wait for the store per check (default 100ms)
  --upstream-timeout DUR    longest wait for an upstream connection, and longest silence from the
                            upstream once it has the request or while it takes the body (default 30s)
  --client-timeout DUR      longest a client may take over its request headers, and longest
                            silence in its body; then 408, connection closed (default 30s)
  --client-concurrency N    most requests one client address may have in flight upstream at once
                            (per process; default 64); past it 429
  --shutdown-timeout DUR    longest wait for in-flight requests on SIGTERM (default 10s)
  --log-level LEVEL         debug, info (default: one line per request), warn or error
  --check                   validate the configuration as start would, print it, and exit
  -h, --help                show this help

Environment: REDIS_URL (store), FLOODGATE_API_KEY_SECRET (HMAC secret for API keys in limiter keys).
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
  const running = await start(parsed, config, { logger, metrics });
  return running.done;
}

/**
 * Builds a gateway generation; a config mistake found while building (a route pattern the
 * router refuses) names the config file, as the config's own errors do.
 */
async function buildNamed(parsed: Parsed, parts: GatewayParts): Promise<Gateway> {
  try {
    return await buildGateway(parts);
  } catch (error) {
    const file = stringOption(parsed, 'config');
    if (error instanceof ConfigError && file !== undefined)
      throw new ConfigError(`${file}: ${error.message}`);
    throw error;
  }
}

/** `--check`: builds the gateway as start would (on a memory store, listening nowhere), then drops it. */
async function checkGateway(parsed: Parsed, config: GatewayConfig): Promise<void> {
  const logger = createLogger(process.stderr, 'error');
  const metrics = gatewayMetrics();
  const store = await openStore(undefined, logger, metrics);
  const gateway = await buildNamed(parsed, { config, store, logger, metrics });
  await gateway.close();
}

/** What every generation shares for the life of the process. */
interface Shared {
  logger: Logger;
  metrics: GatewayMetrics;
  /** HMAC secret for API keys in limiter keys (FLOODGATE_API_KEY_SECRET). */
  apiKeySecret: string | undefined;
}

/** A running gateway: the listening server, and the parts a reload replaces or shutdown closes. */
interface Running {
  readonly parsed: Parsed;
  readonly shared: Shared;
  readonly server: Server;
  readonly admin: AdminListener | undefined;
  readonly grpc: GrpcListener | undefined;
  config: GatewayConfig;
  store: StoreHandle;
  gateway: Gateway;
  /** Replaced generations still finishing their requests. */
  readonly retiring: Set<Gateway>;
  /** Set on SIGTERM/SIGINT: every response then closes its connection. */
  draining: boolean;
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

function partsOf(config: GatewayConfig, store: StoreHandle, shared: Shared): GatewayParts {
  const { logger, metrics, apiKeySecret } = shared;
  return { config, store, logger, metrics, ...(apiKeySecret ? { apiKeySecret } : {}) };
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

/** SIGHUP: re-reads the config and swaps in a new generation; a bad config keeps the running one. */
async function reload(running: Running): Promise<void> {
  const { logger, metrics } = running.shared;
  logger.info('reload_started');
  let next: GatewayConfig;
  try {
    next = await loadConfig(running.parsed);
  } catch (error) {
    metrics.reloads.inc({ result: 'failed' });
    logger.error('reload_failed', { error: (error as Error).message, kept: 'previous configuration' });
    return;
  }
  warnListenChanges(running.config, next, logger);
  for (const warning of configWarnings(next)) logger.warn('config_warning', { detail: warning });
  const previousStore = running.store;
  let nextStore = previousStore;
  try {
    if (!sameTarget(next.redis, previousStore.target))
      nextStore = await openStore(next.redis, logger, metrics);
    const nextGateway = await buildGateway(partsOf(next, nextStore, running.shared));
    const previous = running.gateway;
    running.gateway = nextGateway;
    running.config = next;
    running.server.headersTimeout = next.clientTimeoutMs;
    running.store = nextStore;
    metrics.reloads.inc({ result: 'ok' });
    logger.info('reloaded', { store: nextStore.label, ...summary(next) });
    retire(running, previous, previousStore !== nextStore ? previousStore : undefined);
  } catch (error) {
    if (nextStore !== previousStore) await nextStore.close();
    metrics.reloads.inc({ result: 'failed' });
    logger.error('reload_failed', { error: (error as Error).message, kept: 'previous configuration' });
  }
}

function warnListenChanges(config: GatewayConfig, next: GatewayConfig, logger: Logger): void {
  if (
    next.host !== config.host ||
    next.port !== config.port ||
    JSON.stringify(next.admin) !== JSON.stringify(config.admin) ||
    next.grpc?.port !== config.grpc?.port
  ) {
    logger.warn('reload_listen_unchanged', {
      detail: 'host, port, admin and grpc port changes need a restart',
    });
  }
}

/**
 * A replaced generation finishes its requests in the background (no deadline: it may be
 * streaming), then closes; so does a replaced store once its last generation is gone.
 */
function retire(running: Running, previous: Gateway, previousStore: StoreHandle | undefined): void {
  running.retiring.add(previous);
  void previous
    .drain()
    .then(async () => {
      await previous.close();
      await previousStore?.close();
    })
    .catch((error) => running.shared.logger.error('retire_error', { error }))
    .finally(() => running.retiring.delete(previous));
}

/** One reload at a time; a SIGHUP during a reload schedules one more. */
function createReloader(running: Running) {
  let reloading: Promise<void> | undefined;
  let again = false;
  return {
    onHangup() {
      if (reloading !== undefined) {
        again = true;
        return;
      }
      reloading = (async () => {
        do {
          again = false;
          await reload(running);
        } while (again);
        reloading = undefined;
      })();
    },
    /** Resolves once no reload is under way. */
    settled: () => reloading,
  };
}

/** Stops accepting, lets in-flight requests finish (up to the shutdown timeout), closes everything. */
async function shutdown(running: Running, signal: string, reloading: Promise<void> | undefined) {
  const { server, shared } = running;
  const { logger } = shared;
  running.draining = true;
  logger.info('shutdown_started', { signal });
  server.close();
  server.closeIdleConnections();
  // gRPC calls under way finish while the HTTP requests drain, within the same timeout.
  const grpcClosed = running.grpc?.close(running.config.shutdownTimeoutMs);
  // Keep-alive connections that finish a response during the drain are closed as they go idle.
  const sweeper = setInterval(() => server.closeIdleConnections(), 100);
  await reloading;
  const generations = [running.gateway, ...running.retiring];
  const drains = await Promise.all(
    generations.map((generation) => generation.drain(running.config.shutdownTimeoutMs)),
  );
  const drained = drains.every(Boolean);
  clearInterval(sweeper);
  if (!drained) {
    logger.warn('shutdown_timeout', {
      detail: `requests still in flight after ${formatDuration(running.config.shutdownTimeoutMs)}`,
    });
  }
  // Drained or not, nothing more will be answered: close what is left (idle keep-alive sockets).
  server.closeAllConnections();
  try {
    await grpcClosed;
    await Promise.all(generations.map((generation) => generation.close()));
    await running.admin?.close();
    await running.store.close();
  } catch (error) {
    logger.error('shutdown_error', { error });
  }
  logger.info('stopped', { signal, drained });
}

/** SIGHUP reloads, SIGTERM/SIGINT shut down; resolves with the exit code. */
function handleSignals(running: Running): Promise<number> {
  const reloader = createReloader(running);
  const onHangup = () => reloader.onHangup();
  let stopping = false;
  return new Promise<number>((resolve) => {
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      void shutdown(running, signal, reloader.settled()).then(() => {
        process.off('SIGHUP', onHangup);
        process.off('SIGTERM', onTerm);
        process.off('SIGINT', onInt);
        resolve(EXIT_OK);
      });
    };
    const onTerm = () => stop('SIGTERM');
    const onInt = () => stop('SIGINT');
    process.on('SIGHUP', onHangup);
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    running.server.on('error', (error) => {
      running.shared.logger.error('server_error', { error });
      if (!stopping) {
        stopping = true;
        resolve(EXIT_FAILURE);
      }
    });
  });
}
