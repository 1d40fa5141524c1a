/**
 * `floodgate serve`: the gateway's lifecycle. One node:http server owns the listening socket and
 * every connection; it hands requests to the current gateway generation. SIGHUP builds a new
 * generation from the re-read configuration and swaps it in (no connection is closed; the old
 * one finishes its requests, then closes). SIGTERM/SIGINT stop accepting, let in-flight requests
 * finish (up to the shutdown timeout), then exit 0.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
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
import { buildGateway, type Gateway, type GatewayParts } from './gateway.js';
import { createLogger, LOG_LEVELS, type Logger, type LogLevel } from './log.js';
import { type GatewayMetrics, gatewayMetrics } from './metrics.js';
import { openStore, type StoreHandle, sameTarget } from './store.js';

export const SERVE_HELP = `Usage: floodgate serve [options]

Runs a rate-limiting HTTP gateway. Allowed requests are forwarded to --upstream (a streaming
reverse proxy); limited ones get 429 with the standard headers. Without --upstream it serves a
small demo API. Every path of the public port is forwarded; GET /metrics (Prometheus) and
GET /healthz are answered on a separate admin listener. Requests are counted under the client
address, and under an API key only when the config's tiers.keys lists it. Routes, skips and
costs match the normalized path (escapes, //, ., .. and case resolved); a path that cannot be
normalized gets 400.

Options:
  --upstream URL            forward allowed requests to this http:// service (default: demo API)
  --host HOST               address to listen on (default 127.0.0.1)
  --port PORT               port to listen on (default 8080; 0 picks a free one)
  --admin-host HOST         address of the admin listener (/metrics, /healthz; default 127.0.0.1)
  --admin-port PORT         port of the admin listener (default 9477; 0 turns it off)
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

interface Shared {
  logger: Logger;
  metrics: GatewayMetrics;
}

async function start(
  parsed: Parsed,
  initial: GatewayConfig,
  shared: Shared,
): Promise<{ done: Promise<number> }> {
  const { logger, metrics } = shared;
  const apiKeySecret = process.env.FLOODGATE_API_KEY_SECRET || undefined;
  let config = initial;
  let store: StoreHandle = await openStore(config.redis, logger, metrics);
  let gateway: Gateway;
  try {
    gateway = await buildNamed(parsed, {
      config,
      store,
      ...shared,
      ...(apiKeySecret ? { apiKeySecret } : {}),
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  let admin: AdminListener | undefined;
  try {
    admin =
      config.admin === undefined
        ? undefined
        : await startAdmin({ ...config.admin, logger, metrics, store: () => store });
  } catch (error) {
    await gateway.close();
    await store.close();
    throw error;
  }

  let draining = false;
  const server: Server = createServer(edgeServerOptions(config.clientTimeoutMs), (req, res) => {
    if (draining) res.setHeader('connection', 'close');
    gateway.handle(req, res);
  });
  answerClientErrors(server, logger);
  try {
    server.listen(config.port, config.host);
    await once(server, 'listening');
  } catch (error) {
    await gateway.close();
    await admin?.close();
    await store.close();
    throw new RuntimeFailure(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
  }
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  logger.info('listening', {
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    upstream: config.upstream === undefined ? 'demo' : redactUrl(config.upstream.href),
    admin: admin?.url ?? 'off',
    store: store.label,
    ...summary(config),
  });

  // SIGHUP: one reload at a time; a signal during a reload schedules one more.
  let reloading: Promise<void> | undefined;
  let again = false;
  async function reload(): Promise<void> {
    logger.info('reload_started');
    let next: GatewayConfig;
    try {
      next = await loadConfig(parsed);
    } catch (error) {
      metrics.reloads.inc({ result: 'failed' });
      logger.error('reload_failed', { error: (error as Error).message, kept: 'previous configuration' });
      return;
    }
    if (
      next.host !== config.host ||
      next.port !== config.port ||
      JSON.stringify(next.admin) !== JSON.stringify(config.admin)
    ) {
      logger.warn('reload_listen_unchanged', { detail: 'host, port and admin changes need a restart' });
    }
    for (const warning of configWarnings(next)) logger.warn('config_warning', { detail: warning });
    const previousStore = store;
    let nextStore = store;
    try {
      if (!sameTarget(next.redis, store.target)) nextStore = await openStore(next.redis, logger, metrics);
      const nextGateway = await buildGateway({
        config: next,
        store: nextStore,
        ...shared,
        ...(apiKeySecret ? { apiKeySecret } : {}),
      });
      const previous = gateway;
      gateway = nextGateway;
      config = next;
      server.headersTimeout = next.clientTimeoutMs;
      store = nextStore;
      metrics.reloads.inc({ result: 'ok' });
      logger.info('reloaded', { store: store.label, ...summary(config) });
      retire(previous, previousStore !== store ? previousStore : undefined);
    } catch (error) {
      if (nextStore !== previousStore) await nextStore.close();
      metrics.reloads.inc({ result: 'failed' });
      logger.error('reload_failed', { error: (error as Error).message, kept: 'previous configuration' });
    }
  }
  // A replaced generation finishes its requests in the background (no deadline: it may be
  // streaming), then closes; so does a replaced store once its last generation is gone.
  const retiring = new Set<Gateway>();
  function retire(previous: Gateway, previousStore: StoreHandle | undefined): void {
    retiring.add(previous);
    void previous
      .drain()
      .then(async () => {
        await previous.close();
        await previousStore?.close();
      })
      .catch((error) => logger.error('retire_error', { error }))
      .finally(() => retiring.delete(previous));
  }

  const onHangup = () => {
    if (reloading !== undefined) {
      again = true;
      return;
    }
    reloading = (async () => {
      do {
        again = false;
        await reload();
      } while (again);
      reloading = undefined;
    })();
  };

  let resolveDone: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    resolveDone = resolve;
  });
  let stopping = false;
  async function shutdown(signal: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    draining = true;
    logger.info('shutdown_started', { signal });
    server.close();
    server.closeIdleConnections();
    // Keep-alive connections that finish a response during the drain are closed as they go idle.
    const sweeper = setInterval(() => server.closeIdleConnections(), 100);
    await reloading;
    const drains = await Promise.all(
      [gateway, ...retiring].map((generation) => generation.drain(config.shutdownTimeoutMs)),
    );
    const drained = drains.every(Boolean);
    clearInterval(sweeper);
    if (!drained) {
      logger.warn('shutdown_timeout', {
        detail: `requests still in flight after ${formatDuration(config.shutdownTimeoutMs)}`,
      });
    }
    // Drained or not, nothing more will be answered: close what is left (idle keep-alive sockets).
    server.closeAllConnections();
    try {
      await Promise.all([gateway, ...retiring].map((generation) => generation.close()));
      await admin?.close();
      await store.close();
    } catch (error) {
      logger.error('shutdown_error', { error });
    }
    process.off('SIGHUP', onHangup);
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    logger.info('stopped', { signal, drained });
    resolveDone(EXIT_OK);
  }
  const onTerm = () => void shutdown('SIGTERM');
  const onInt = () => void shutdown('SIGINT');
  process.on('SIGHUP', onHangup);
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  server.on('error', (error) => {
    logger.error('server_error', { error });
    if (!stopping) {
      stopping = true;
      resolveDone(EXIT_FAILURE);
    }
  });
  return { done };
}
