/**
 * The gateway's admin listener: `GET /metrics` (Prometheus), `GET /healthz`, `GET /top` (the keys
 * denied or checked most), and the live page `GET /` with the `GET /stats` it polls, on an address of
 * their own (default 127.0.0.1:9477), so the public port forwards every path to the upstream
 * and operators' endpoints are not reachable from where clients are. Bodies never carry
 * internal error text: it goes to the log.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { TopEntry } from '../../index.js';
import { RuntimeFailure } from '../args.js';
import { answerJson } from './envoy/json.js';
import type { RlsService } from './envoy/service.js';
import { liveStats, type TopBy, topQuery } from './live.js';
import { LIVE_PAGE, LIVE_PAGE_CSP } from './live-page.js';
import type { Logger } from './log.js';
import type { GatewayMetrics } from './metrics.js';
import type { StoreHandle } from './store.js';

export interface AdminOptions {
  host: string;
  port: number;
  metrics: GatewayMetrics;
  logger: Logger;
  /** The current store (it changes when a reload points at another Redis). */
  store: () => StoreHandle;
  /** The current Envoy rate limit service, for `POST /json`. */
  rls: () => RlsService | undefined;
  /** The current generation's keys denied or checked most. */
  top: (by: TopBy, limit: number, fleet?: boolean) => Promise<TopEntry[]>;
}

export interface AdminListener {
  /** `http://host:port` as bound. */
  readonly url: string;
  close(): Promise<void>;
}

/** The admin listener's `http://host:port` (an IPv6 host in brackets). */
export function adminUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Starts the admin listener; a port that cannot be bound is a RuntimeFailure naming the flag. */
export async function startAdmin(options: AdminOptions): Promise<AdminListener> {
  const { metrics, logger, store } = options;
  const server: Server = createServer(async (req, res) => {
    const [path, search = ''] = (req.url ?? '/').split('?', 2);
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (path === '/json' && req.method === 'POST') {
      try {
        const answer = await answerJson(req, options.rls);
        return send(answer.status, 'application/json', answer.body);
      } catch (error) {
        logger.error('rls_error', { error });
        return send(500, 'application/json', JSON.stringify({ error: 'internal error' }));
      }
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', path === '/json' ? 'POST' : 'GET, HEAD');
      return send(405, 'text/plain', 'method not allowed\n');
    }
    if (path === '/metrics') {
      return send(200, 'text/plain; version=0.0.4; charset=utf-8', metrics.registry.render());
    }
    if (path === '/top' || path === '/stats') {
      try {
        if (path === '/stats') {
          const stats = await liveStats({ metrics, store: () => store().label, top: options.top });
          return send(200, 'application/json', JSON.stringify(stats));
        }
        const query = topQuery(new URLSearchParams(search));
        if (typeof query === 'string') return send(400, 'application/json', JSON.stringify({ error: query }));
        return send(
          200,
          'application/json',
          JSON.stringify(await options.top(query.by, query.limit, query.fleet)),
        );
      } catch (error) {
        // A reload can close a generation's limiters while they answer.
        logger.error('admin_error', { path, error });
        return send(500, 'application/json', JSON.stringify({ error: 'internal error' }));
      }
    }
    if (path === '/') {
      return send(200, 'text/html; charset=utf-8', LIVE_PAGE, {
        'content-security-policy': LIVE_PAGE_CSP,
        'x-content-type-options': 'nosniff',
      });
    }
    if (path === '/healthz') {
      const current = store();
      try {
        await current.ping(1000);
        const warnings = current.warnings();
        const body = { status: 'ok', store: current.label, ...(warnings.length > 0 ? { warnings } : {}) };
        return send(200, 'application/json', JSON.stringify(body));
      } catch (error) {
        logger.warn('healthz_failed', { store: current.label, error });
        return send(503, 'application/json', JSON.stringify({ status: 'unavailable', store: current.label }));
      }
    }
    send(
      404,
      'text/plain',
      'not found: the admin listener answers /, /stats, /top, /metrics, /healthz and POST /json\n',
    );
  });
  try {
    server.listen(options.port, options.host);
    await once(server, 'listening');
  } catch (error) {
    throw new RuntimeFailure(
      `--admin-port: cannot listen on ${options.host}:${options.port}: ${(error as Error).message}`,
    );
  }
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    url: adminUrl(options.host, port),
    async close() {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}
