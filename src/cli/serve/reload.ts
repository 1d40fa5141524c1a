/**
 * SIGHUP: the config (and the Envoy rate limit config) is read again and a new generation is
 * swapped in without closing a connection; the replaced one finishes its requests, then closes.
 */
import { loadConfig } from '../config/load.js';
import type { GatewayConfig } from '../config/schema.js';
import { configWarnings, summary } from './describe.js';
import { buildGateway, type Gateway } from './gateway.js';
import type { Logger } from './log.js';
import { partsOf, type Running } from './state.js';
import { openStore, type StoreHandle, sameTarget } from './store.js';

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
 * A replaced generation finishes its requests and RLS calls in the background (no deadline: it
 * may be streaming; nothing new reaches it), then closes with its limiters, whose quota slices go
 * back; then a replaced store closes, once its last generation is gone.
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
export function createReloader(running: Running) {
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
