/**
 * The gateway's configuration: one validation pass from the raw file (JSON or YAML, with flags
 * already folded in) to the resolved form `serve`, `inspect` and `reset` trust. Every error
 * names the field (`routes[2].limit: ...`), or the flag that set it.
 */
import type { AdaptiveLimitOptions, Criticality, RuleOptions } from '../../index.js';
import { parseTrustProxy as checkTrustProxy, HEADER_STYLES, type HeaderStyle } from '../../internal.js';
import { parseNode, type RedisTarget, redactUrl } from '../redis.js';
import { checkPriorityUse, parseAdaptive, parsePriorityHeader } from './adaptive.js';
import {
  arrayAt,
  booleanAt,
  ConfigError,
  core,
  durationAt,
  fail,
  HEADER_NAME,
  integerAt,
  type Labels,
  objectAt,
  oneOf,
  stringAt,
} from './check.js';
import { parsePlanPriorities, parsePlans, parseTiers, type Tiers } from './plans.js';
import type { RlsDomains } from './rls.js';
import { parseRoutes, type RouteSpec } from './routes.js';
import { checkShadow } from './rules.js';

export { DEFAULT_PLAN, sha256Hex, type Tiers } from './plans.js';
export { METHODS, type RouteSpec } from './routes.js';

export type { HeaderStyle };

/** The resolved configuration of a gateway (and of inspect/reset, which use its rules and store). */
export interface GatewayConfig {
  readonly host: string;
  readonly port: number;
  readonly upstream: URL | undefined;
  readonly upstreamTimeoutMs: number;
  /** Longest a client may take over its request headers, and longest silence in its body. */
  readonly clientTimeoutMs: number;
  /** Most requests one client address may have in flight upstream at once (per process). */
  readonly clientConcurrency: number;
  readonly redis: RedisTarget | undefined;
  readonly prefix: string;
  readonly storeTimeoutMs: number;
  readonly onStoreError: 'open' | 'closed';
  /** Every rule a shadow rule: evaluated and counted, never denying (`--shadow`). */
  readonly shadow: boolean;
  /** The adaptive concurrency limit in front of the upstream (`--adaptive`); undefined when off. */
  readonly adaptive: AdaptiveLimitOptions | undefined;
  /** The lowercase header carrying a request's criticality (`--priority-header`). */
  readonly priorityHeader: string | undefined;
  readonly headers: HeaderStyle | false | readonly HeaderStyle[];
  /** Status of a denial while the key is blocked (a rule's `block`, or a block override). */
  readonly blockedStatus: 403 | 429;
  readonly trustProxy: boolean | number | string;
  /**
   * The header API keys are read from: the tier header when `tiers.keys` lists keys (only those
   * count as API keys), or false to key every request by its client address.
   */
  readonly apiKeyHeader: string | false;
  /** The admin listener (/metrics, /healthz), or undefined when turned off (`--admin-port 0`). */
  readonly admin: { readonly host: string; readonly port: number } | undefined;
  readonly tiers: Tiers | undefined;
  /** Plan name → rules; a single `default` plan without tiers. */
  readonly plans: ReadonlyMap<string, readonly RuleOptions[]>;
  /** Plans' criticality under an adaptive limit (`priority` on a plan), after a route's. */
  readonly planPriorities: ReadonlyMap<string, Criticality>;
  /** The user's routes and skip entries; every other path falls to the catch-all, under the plan's rules. */
  readonly routes: readonly RouteSpec[];
  readonly shutdownTimeoutMs: number;
  /** The Envoy rate limit service (gRPC), or undefined when off. */
  readonly grpc: GrpcSettings | undefined;
  /** The envoyproxy/ratelimit config `grpc.config` names, read by loadConfig. */
  readonly rls: RlsDomains | undefined;
}

export interface GrpcSettings {
  readonly port: number;
  /** A YAML file or a directory of them, in envoyproxy/ratelimit's format. */
  readonly config: string;
  /** Draft RateLimit headers sent back in response_headers_to_add (none by default). */
  readonly headers: readonly HeaderStyle[];
}

/** The gRPC port envoyproxy/ratelimit listens on, and so the default here. */
export const DEFAULT_GRPC_PORT = 8081;

const PREFIX = /^[A-Za-z0-9_.:@/+=~-]{1,64}$/;

const TOP_FIELDS = [
  'host',
  'port',
  'upstream',
  'upstreamTimeout',
  'clientTimeout',
  'clientConcurrency',
  'store',
  'onStoreError',
  'shadow',
  'headers',
  'blockedStatus',
  'trustProxy',
  'apiKeyHeader',
  'rules',
  'concurrency',
  'tiers',
  'plans',
  'routes',
  'skip',
  'shutdownTimeout',
  'admin',
  'grpc',
  'adaptive',
  'priorityHeader',
];

/** The admin listener's defaults: loopback, and a port of its own. */
export const DEFAULT_ADMIN = { host: '127.0.0.1', port: 9477 } as const;
/** Validates a raw configuration object (from a file and flags) into a GatewayConfig. */
export function parseGatewayConfig(input: unknown, labels: Labels = {}): GatewayConfig {
  const raw = objectAt(input ?? {}, '', TOP_FIELDS);
  const at = (field: string) => labels[field] ?? field;

  const store =
    raw.store === undefined
      ? {}
      : objectAt(raw.store, at('store'), ['redis', 'cluster', 'prefix', 'timeout']);
  let redis: RedisTarget | undefined;
  if (store.redis !== undefined && store.cluster !== undefined) {
    fail(at('store'), 'give either redis or cluster, not both');
  }
  if (store.redis !== undefined) {
    const url = stringAt(store.redis, labels['store.redis'] ?? 'store.redis');
    try {
      parseNode(url, labels['store.redis'] ?? 'store.redis');
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    redis = { url };
  } else if (store.cluster !== undefined) {
    const where = labels['store.cluster'] ?? 'store.cluster';
    const seeds = arrayAt(store.cluster, where).map((seed, i) => stringAt(seed, `${where}[${i}]`));
    if (seeds.length === 0) fail(where, 'give at least one host:port');
    for (const [i, seed] of seeds.entries()) {
      try {
        parseNode(seed, `${where}[${i}]`);
      } catch (error) {
        throw new ConfigError((error as Error).message);
      }
    }
    redis = { cluster: seeds };
  }

  if (raw.tiers !== undefined && raw.plans === undefined) {
    fail('tiers', 'tiers need plans, e.g. plans: { free: [60/1m], pro: [600/1m] }');
  }
  if (raw.plans !== undefined && raw.tiers === undefined) {
    fail(
      'plans',
      'plans need tiers: which header picks the plan, e.g. tiers: { header: x-api-key, keys: {...}, default: free }',
    );
  }
  const plans = parsePlans(raw, labels);
  const tiers = raw.tiers === undefined ? undefined : parseTiers(raw.tiers, plans);

  const routes = parseRoutes(raw, plans);
  const shadow = raw.shadow === undefined ? false : booleanAt(raw.shadow, at('shadow'));
  if (shadow) {
    const everyRule = [...plans.values(), ...routes.flatMap((route) => [...route.rules.values()])].flat();
    checkShadow(everyRule, at('shadow'), 'some rules (every rule becomes a shadow rule)');
  }
  const adaptive = parseAdaptive(raw.adaptive, at('adaptive'));
  const priorityHeader = parsePriorityHeader(raw.priorityHeader, at('priorityHeader'));
  const planPriorities = parsePlanPriorities(raw);
  checkPriorityUse(
    adaptive,
    priorityHeader === undefined ? undefined : at('priorityHeader'),
    routes,
    planPriorities,
  );
  const admin = raw.admin === undefined ? {} : objectAt(raw.admin, at('admin'), ['host', 'port']);
  const adminPort =
    admin.port === undefined
      ? DEFAULT_ADMIN.port
      : integerAt(admin.port, labels['admin.port'] ?? 'admin.port', 0, 65535);

  return {
    host: raw.host === undefined ? '127.0.0.1' : stringAt(raw.host, at('host')),
    port: raw.port === undefined ? 8080 : integerAt(raw.port, at('port'), 0, 65535),
    upstream: raw.upstream === undefined ? undefined : parseUpstream(raw.upstream, at('upstream')),
    upstreamTimeoutMs:
      raw.upstreamTimeout === undefined ? 30_000 : durationAt(raw.upstreamTimeout, at('upstreamTimeout')),
    clientTimeoutMs:
      raw.clientTimeout === undefined ? 30_000 : durationAt(raw.clientTimeout, at('clientTimeout')),
    clientConcurrency:
      raw.clientConcurrency === undefined
        ? 64
        : integerAt(raw.clientConcurrency, at('clientConcurrency'), 1, 100_000),
    redis,
    prefix:
      store.prefix === undefined
        ? 'floodgate'
        : stringAt(
            store.prefix,
            labels['store.prefix'] ?? 'store.prefix',
            PREFIX,
            'must be 1-64 characters of letters, digits and _ . : @ / + = ~ -',
          ),
    storeTimeoutMs:
      store.timeout === undefined
        ? 100
        : durationAt(store.timeout, labels['store.timeout'] ?? 'store.timeout'),
    onStoreError:
      raw.onStoreError === undefined
        ? 'open'
        : oneOf(raw.onStoreError, at('onStoreError'), ['open', 'closed']),
    shadow,
    adaptive,
    priorityHeader,
    headers: parseHeaders(raw.headers, at('headers')),
    blockedStatus: parseBlockedStatus(raw.blockedStatus, at('blockedStatus')),
    trustProxy: parseTrustProxy(raw.trustProxy, at('trustProxy')),
    apiKeyHeader: parseApiKeyHeader(raw.apiKeyHeader, at('apiKeyHeader'), tiers),
    admin:
      adminPort === 0
        ? undefined
        : {
            host:
              admin.host === undefined
                ? DEFAULT_ADMIN.host
                : stringAt(admin.host, labels['admin.host'] ?? 'admin.host'),
            port: adminPort,
          },
    tiers,
    plans,
    planPriorities,
    routes,
    shutdownTimeoutMs:
      raw.shutdownTimeout === undefined
        ? 10_000
        : durationAt(raw.shutdownTimeout, at('shutdownTimeout'), true),
    grpc: raw.grpc === undefined ? undefined : parseGrpc(raw.grpc, labels),
    rls: undefined,
  };
}

function parseGrpc(value: unknown, labels: Labels): GrpcSettings {
  const grpc = objectAt(value, labels.grpc ?? 'grpc', ['port', 'config', 'headers']);
  if (grpc.config === undefined) {
    fail(
      labels['grpc.port'] ?? 'grpc.config',
      'the Envoy rate limit service needs its limits: give grpc.config (--grpc-config), an envoyproxy/ratelimit YAML file or directory',
    );
  }
  const headers =
    grpc.headers === undefined || grpc.headers === false ? false : parseHeaders(grpc.headers, 'grpc.headers');
  return {
    port:
      grpc.port === undefined
        ? DEFAULT_GRPC_PORT
        : integerAt(grpc.port, labels['grpc.port'] ?? 'grpc.port', 0, 65535),
    config: stringAt(grpc.config, labels['grpc.config'] ?? 'grpc.config'),
    headers: headers === false ? [] : [headers].flat(),
  };
}

function parseUpstream(value: unknown, path: string): URL {
  const text = stringAt(value, path);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    fail(path, `${JSON.stringify(redactUrl(text))} is not a URL; write e.g. http://127.0.0.1:3000`);
  }
  if (url.protocol !== 'http:') fail(path, `only http:// upstreams are supported, got ${url.protocol}//`);
  if (url.search || url.hash) fail(path, 'must not have a query string or fragment');
  return url;
}

function parseHeaders(value: unknown, path: string): GatewayConfig['headers'] {
  if (value === undefined) return 'draft-6';
  if (value === false) return false;
  const list = Array.isArray(value) ? value : [value];
  const styles = list.map((style, i) =>
    oneOf(style, Array.isArray(value) ? `${path}[${i}]` : path, HEADER_STYLES),
  );
  if (styles.includes('draft-6') && styles.includes('draft-10')) {
    fail(
      path,
      "'draft-6' and 'draft-10' both define RateLimit-Policy; choose one (either goes with 'legacy')",
    );
  }
  return Array.isArray(value) ? styles : (styles[0] as HeaderStyle);
}

function parseBlockedStatus(value: unknown, path: string): GatewayConfig['blockedStatus'] {
  if (value === undefined) return 429;
  if (value !== 403 && value !== 429) return fail(path, `${JSON.stringify(value)} must be 403 or 429`);
  return value;
}

function parseTrustProxy(value: unknown, path: string): boolean | number | string {
  if (value === undefined) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return integerAt(value, path, 0, 100);
  let list: string[];
  if (typeof value === 'string' && value.length > 0) list = value.split(',').map((item) => item.trim());
  else if (Array.isArray(value)) list = value.map((item, i) => stringAt(item, `${path}[${i}]`));
  else return fail(path, 'expected true, false, a hop count, or addresses/CIDRs of trusted proxies');
  // The same validation the HTTP guards use: what Fastify would refuse at start is refused here.
  core(() => checkTrustProxy(list, path));
  return list.join(',');
}

/**
 * `apiKeyHeader`: false, or (with `tiers.keys`) the tier header, which is where the listed keys
 * are read. API keys that no tier lists never become limiter keys, so no other header is useful.
 */
function parseApiKeyHeader(value: unknown, path: string, tiers: Tiers | undefined): string | false {
  if (value === false) return false;
  const header =
    value === undefined
      ? undefined
      : stringAt(value, path, HEADER_NAME, 'is not a header name').toLowerCase();
  if (tiers?.keys === undefined) return header ?? 'x-api-key';
  if (header !== undefined && header !== tiers.header) {
    fail(
      path,
      `'${header}' is not tiers.header '${tiers.header}': API keys count only when tiers.keys lists them, read from tiers.header; drop ${path} or set it to false`,
    );
  }
  return tiers.header;
}
