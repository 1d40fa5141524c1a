/**
 * Signals: SIGHUP reloads (reload.ts); SIGTERM/SIGINT stop accepting, let in-flight requests and
 * gRPC calls finish (up to the shutdown timeout), close the limiters (their quota slices go back),
 * then everything else, and resolve the exit code.
 */
import { formatDuration } from '../../internal.js';
import { EXIT_FAILURE, EXIT_OK } from '../args.js';
import { createReloader } from './reload.js';
import type { Running } from './state.js';

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
    // No RLS call (gRPC, POST /json) can start now: the generations' limiters close, giving their
    // quota slices and slots back while the store is still open.
    await running.admin?.close();
    await Promise.all(generations.map((generation) => generation.close()));
    await running.store.close();
    // Last: the limiters' final counts are exported before the process ends.
    await shared.otel?.shutdown();
  } catch (error) {
    logger.error('shutdown_error', { error });
  }
  logger.info('stopped', { signal, drained });
}

/** SIGHUP reloads, SIGTERM/SIGINT shut down; resolves with the exit code. */
export function handleSignals(running: Running): Promise<number> {
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
