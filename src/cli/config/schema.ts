/**
 * The gateway's configuration: one validation pass from the raw file (JSON or YAML, with flags
 * already folded in) to the resolved form `serve`, `inspect` and `reset` trust. Every error
 * names the field (`routes[2].limit: ...`), or the flag that set it.
 */
import { createHash } from 'node:crypto';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../algorithms/index.js';
import { formatDuration, type RuleOptions, resolveRules } from '../../rules.js';
import { parseRate } from '../args.js';
import { parseNode, type RedisTarget, redactUrl } from '../redis.js';
import {
  arrayAt,
  booleanAt,
  ConfigError,
  core,
  durationAt,
  type Fields,
  fail,
  integerAt,
  join,
  objectAt,
  oneOf,
  stringAt,
} from './check.js';

export const HEADER_STYLES = ['draft-6', 'draft-10', 'legacy'] as const;
export type HeaderStyle = (typeof HEADER_STYLES)[number];
export const METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'] as const;
/** Paths the gateway answers itself. */
export const RESERVED_PATHS = ['/metrics', '/healthz'];
/** The plan of a config without tiers. */
export const DEFAULT_PLAN = 'default';

export interface RouteSpec {
  /** Where it was defined, for messages: `routes[2]` or `skip[0]`. */
  readonly where: string;
  /** Names the route in metrics and logs, and prefixes its unnamed rules. */
  readonly name: string;
  readonly methods: readonly string[];
  /** A Fastify path pattern: `/v1/users/:id`, `/files/*`. */
  readonly path: string;
  readonly cost: number;
  readonly skip: boolean;
  /** Rules per plan for this route (the plan's own rules included unless `inherit: false`). */
  readonly rules: ReadonlyMap<string, readonly RuleOptions[]>;
}

export interface GatewayConfig {
  readonly host: string;
  readonly port: number;
  readonly upstream: URL | undefined;
  readonly upstreamTimeoutMs: number;
  readonly redis: RedisTarget | undefined;
  readonly prefix: string;
  readonly storeTimeoutMs: number;
  readonly onStoreError: 'open' | 'closed';
  readonly headers: HeaderStyle | false | readonly HeaderStyle[];
  readonly trustProxy: boolean | number | string;
  /** Header the default key reads API keys from, or false to key by client address only. */
  readonly apiKeyHeader: string | false;
  readonly tiers: Tiers | undefined;
  /** Plan name → rules; a single `default` plan without tiers. */
  readonly plans: ReadonlyMap<string, readonly RuleOptions[]>;
  /** The user's routes and skip entries; every other path falls to the catch-all, under the plan's rules. */
  readonly routes: readonly RouteSpec[];
  readonly shutdownTimeoutMs: number;
}

export interface Tiers {
  /** The request header that identifies the tenant (lower case). */
  readonly header: string;
  /** SHA-256 (hex) of a header value → plan; without it, the header's value is the plan name. */
  readonly keys: ReadonlyMap<string, string> | undefined;
  readonly default: string;
}

const TOP_FIELDS = [
  'host',
  'port',
  'upstream',
  'upstreamTimeout',
  'store',
  'onStoreError',
  'headers',
  'trustProxy',
  'apiKeyHeader',
  'rules',
  'tiers',
  'plans',
  'routes',
  'skip',
  'shutdownTimeout',
];
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const NAME_HINT = 'must be 1-64 letters, digits, _ . - (starting with a letter or digit)';
const PREFIX = /^[A-Za-z0-9_.:@/+=~-]{1,64}$/;

/** Field → label for fields that came from a flag, so errors name the flag. */
export type Labels = Partial<Record<string, string>>;

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

  return {
    host: raw.host === undefined ? '127.0.0.1' : stringAt(raw.host, at('host')),
    port: raw.port === undefined ? 8080 : integerAt(raw.port, at('port'), 0, 65535),
    upstream: raw.upstream === undefined ? undefined : parseUpstream(raw.upstream, at('upstream')),
    upstreamTimeoutMs:
      raw.upstreamTimeout === undefined ? 30_000 : durationAt(raw.upstreamTimeout, at('upstreamTimeout')),
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
    headers: parseHeaders(raw.headers, at('headers')),
    trustProxy: parseTrustProxy(raw.trustProxy, at('trustProxy')),
    apiKeyHeader:
      raw.apiKeyHeader === undefined
        ? 'x-api-key'
        : raw.apiKeyHeader === false
          ? false
          : stringAt(raw.apiKeyHeader, at('apiKeyHeader'), HEADER_NAME, 'is not a header name').toLowerCase(),
    tiers,
    plans,
    routes,
    shutdownTimeoutMs:
      raw.shutdownTimeout === undefined
        ? 10_000
        : durationAt(raw.shutdownTimeout, at('shutdownTimeout'), true),
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

function parseTrustProxy(value: unknown, path: string): boolean | number | string {
  if (value === undefined) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return integerAt(value, path, 0, 100);
  if (typeof value === 'string' && value.length > 0) return value;
  if (Array.isArray(value)) return value.map((item, i) => stringAt(item, `${path}[${i}]`)).join(',');
  return fail(path, 'expected true, false, a hop count, or addresses/CIDRs of trusted proxies');
}

/**
 * A rule list: objects `{ name?, algorithm?, limit, window?, burst? }` where `limit` may be
 * written `120/1m`, or plain strings `'120/1m'`. The algorithm defaults to sliding-window.
 */
export function parseRuleList(
  value: unknown,
  path: string,
  namePrefix = '',
  defaultAlgorithm: AlgorithmName = 'sliding-window',
): RuleOptions[] {
  const list = Array.isArray(value) ? value : [value];
  const rules = list.map((item, i) => {
    const where = Array.isArray(value) ? `${path}[${i}]` : path;
    return parseRule(typeof item === 'string' ? { limit: item } : item, where, namePrefix, defaultAlgorithm);
  });
  if (rules.length === 0) fail(path, 'give at least one rule, e.g. 120/1m');
  core(() => resolveRules(Array.isArray(value) ? rules : rules[0], path));
  return rules;
}

function parseRule(
  value: unknown,
  path: string,
  namePrefix: string,
  defaultAlgorithm: AlgorithmName,
): RuleOptions {
  const fields = objectAt(value, path, ['name', 'algorithm', 'limit', 'window', 'burst']);
  const algorithm =
    fields.algorithm === undefined
      ? defaultAlgorithm
      : oneOf(fields.algorithm, `${path}.algorithm`, ALGORITHM_NAMES);
  let limit = fields.limit;
  let window = fields.window;
  if (typeof limit === 'string') {
    if (window !== undefined)
      fail(`${path}.window`, `not needed: limit ${JSON.stringify(limit)} already sets the window`);
    let rate: { limit: number; windowMs: number };
    try {
      rate = parseRate(limit, `${path}.limit`);
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    limit = rate.limit;
    window = rate.windowMs;
  } else if (limit === undefined) {
    fail(`${path}.limit`, 'required, e.g. limit: 120/1m');
  } else if (window === undefined) {
    fail(
      `${path}.window`,
      `required with a numeric limit (or write limit: ${JSON.stringify(`${limit}/1m`)})`,
    );
  }
  const rule: Record<string, unknown> = { algorithm, limit, window };
  if (fields.burst !== undefined) rule.burst = fields.burst;
  if (fields.name !== undefined) rule.name = stringAt(fields.name, `${path}.name`, NAME, NAME_HINT);
  else if (namePrefix !== '' && typeof limit === 'number') {
    const windowMs = durationAt(window, `${path}.window`);
    rule.name = `${namePrefix}.${algorithm}-${limit}-per-${formatDuration(windowMs)}`.slice(0, 64);
  }
  // Validated in context (with its siblings) by resolveRules in parseRuleList.
  return rule as unknown as RuleOptions;
}

function parsePlans(raw: Fields, labels: Labels): Map<string, RuleOptions[]> {
  const plans = new Map<string, RuleOptions[]>();
  if (raw.plans !== undefined) {
    if (raw.rules !== undefined)
      fail(labels.rules ?? 'rules', 'with plans, give each plan its rules instead');
    const fields = objectAt(raw.plans, 'plans', Object.keys(raw.plans ?? {}));
    for (const [name, rules] of Object.entries(fields)) {
      const path = join('plans', name);
      if (!NAME.test(name)) fail(path, `plan name ${NAME_HINT}`);
      plans.set(name, parseRuleList(rules, path));
    }
    if (plans.size === 0) fail('plans', 'define at least one plan, e.g. free: [60/1m]');
  } else {
    const rules = raw.rules ?? [{ limit: '60/1m' }];
    plans.set(DEFAULT_PLAN, parseRuleList(rules, labels.rules ?? 'rules'));
  }
  return plans;
}

function parseTiers(value: unknown, plans: ReadonlyMap<string, unknown>): Tiers {
  const fields = objectAt(value, 'tiers', ['header', 'keys', 'default']);
  const header = stringAt(fields.header, 'tiers.header', HEADER_NAME, 'is not a header name').toLowerCase();
  const planNames = [...plans.keys()];
  const fallback = oneOf(fields.default, 'tiers.default', planNames);
  let keys: Map<string, string> | undefined;
  if (fields.keys !== undefined) {
    const entries = Object.entries(objectAt(fields.keys, 'tiers.keys', Object.keys(fields.keys ?? {})));
    keys = new Map();
    for (const [index, [key, plan]] of entries.entries()) {
      // Never echo a key: it may be a live API key.
      const path = `tiers.keys (entry ${index + 1})`;
      oneOf(plan, path, planNames);
      const digest = /^sha256:[0-9a-f]{64}$/i.test(key) ? key.slice(7).toLowerCase() : sha256Hex(key);
      keys.set(digest, plan as string);
    }
  }
  return { header, keys, default: fallback };
}

function parseRoutes(raw: Fields, plans: ReadonlyMap<string, readonly RuleOptions[]>): RouteSpec[] {
  const routes: RouteSpec[] = [];
  const seen = new Map<string, string>();
  const usedNames = new Set<string>();
  const claim = (route: RouteSpec) => {
    for (const method of route.methods) {
      const id = `${method} ${route.path}`;
      const previous = seen.get(id);
      if (previous !== undefined) fail(route.where, `${id} is also defined by ${previous}`);
      seen.set(id, route.where);
    }
    if (RESERVED_PATHS.includes(route.path))
      fail(`${route.where}.path`, `${route.path} is answered by the gateway itself`);
    routes.push(route);
  };

  const list = raw.routes === undefined ? [] : arrayAt(raw.routes, 'routes');
  for (const [index, item] of list.entries()) {
    const where = `routes[${index}]`;
    const fields = objectAt(item, where, [
      'name',
      'method',
      'path',
      'cost',
      'skip',
      'limit',
      'window',
      'algorithm',
      'burst',
      'rules',
      'plans',
      'inherit',
    ]);
    const path = parsePath(fields.path, `${where}.path`);
    const methods = parseMethods(fields.method, `${where}.method`);
    const name =
      fields.name === undefined
        ? uniqueName(defaultRouteName(methods, path), usedNames)
        : stringAt(fields.name, `${where}.name`, NAME, NAME_HINT);
    usedNames.add(name);
    const skip = fields.skip === undefined ? false : booleanAt(fields.skip, `${where}.skip`);
    const cost =
      fields.cost === undefined ? 1 : integerAt(fields.cost, `${where}.cost`, 1, Number.MAX_SAFE_INTEGER);
    const ownFields = ['limit', 'window', 'algorithm', 'burst', 'rules', 'plans', 'inherit', 'cost'].filter(
      (field) => fields[field] !== undefined,
    );
    if (skip && ownFields.length > 0) fail(`${where}.${ownFields[0]}`, 'a skipped route takes no limits');
    if (fields.rules !== undefined && fields.limit !== undefined) {
      fail(`${where}.limit`, 'give either limit (one rule) or rules (a list), not both');
    }
    if (fields.limit === undefined && (fields.algorithm !== undefined || fields.burst !== undefined)) {
      fail(
        `${where}.${fields.algorithm !== undefined ? 'algorithm' : 'burst'}`,
        'goes with limit (e.g. limit: 20/1m)',
      );
    }
    const inherit = fields.inherit === undefined ? true : booleanAt(fields.inherit, `${where}.inherit`);
    let own: RuleOptions[] = [];
    if (fields.limit !== undefined) {
      const rule: Fields = { limit: fields.limit };
      if (fields.window !== undefined) rule.window = fields.window;
      if (fields.algorithm !== undefined) rule.algorithm = fields.algorithm;
      if (fields.burst !== undefined) rule.burst = fields.burst;
      own = parseRuleList(rule, where, name);
    } else if (fields.rules !== undefined) {
      own = parseRuleList(fields.rules, `${where}.rules`, name);
    }
    const perPlan = new Map<string, RuleOptions[]>();
    const planFields =
      fields.plans === undefined ? {} : objectAt(fields.plans, `${where}.plans`, [...plans.keys()]);
    for (const [plan, planRules] of plans) {
      const extra =
        planFields[plan] === undefined
          ? []
          : parseRuleList(planFields[plan], join(`${where}.plans`, plan), name);
      const combined = [...own, ...extra, ...(inherit ? planRules : [])];
      if (combined.length === 0)
        fail(where, `no rules for plan '${plan}': give limit, rules or plans, or inherit: true`);
      core(() => resolveRules(combined, plans.size > 1 ? `${where} (plan ${plan})` : where));
      perPlan.set(plan, combined);
    }
    claim({ where, name, methods, path, cost, skip, rules: skip ? new Map() : perPlan });
  }

  const skips = raw.skip === undefined ? [] : arrayAt(raw.skip, 'skip');
  for (const [index, item] of skips.entries()) {
    const where = `skip[${index}]`;
    const text = stringAt(item, where);
    const match = /^(?:([A-Za-z*,]+)\s+)?(\/\S*)$/.exec(text.trim());
    if (!match)
      fail(
        where,
        `${JSON.stringify(text)} must be a path pattern, optionally after methods: '/assets/*', 'GET /status'`,
      );
    const methods = parseMethods(match[1]?.split(','), where);
    const path = parsePath(match[2], where);
    const name = uniqueName(`skip-${defaultRouteName(methods, path)}`, usedNames);
    usedNames.add(name);
    claim({ where, name, methods, path, cost: 1, skip: true, rules: new Map() });
  }
  return routes;
}

function parsePath(value: unknown, path: string): string {
  const text = stringAt(value, path);
  if (!text.startsWith('/') || /\s/.test(text)) {
    fail(
      path,
      `${JSON.stringify(text)} must start with / and have no spaces, e.g. /v1/users/:id or /assets/*`,
    );
  }
  return text;
}

function parseMethods(value: unknown, path: string): string[] {
  if (value === undefined || value === '*') return [...METHODS];
  const list = Array.isArray(value) ? value : [value];
  const methods = list.map((method, i) =>
    oneOf(
      typeof method === 'string' ? method.toUpperCase() : method,
      Array.isArray(value) ? `${path}[${i}]` : path,
      [...METHODS, '*'],
    ),
  );
  if (methods.includes('*')) return [...METHODS];
  return [...new Set(methods)];
}

function defaultRouteName(methods: readonly string[], path: string): string {
  const verb = methods.length === METHODS.length ? 'any' : methods.join('-').toLowerCase();
  const slug = path.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^-+|-+$/g, '');
  return `${verb}-${slug || 'root'}`.slice(0, 48);
}

function uniqueName(base: string, used: ReadonlySet<string>): string {
  let name = base;
  for (let n = 2; used.has(name); n++) name = `${base}-${n}`;
  return name;
}

/** SHA-256 hex, how API keys are compared with `tiers.keys` without keeping them in clear. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}
