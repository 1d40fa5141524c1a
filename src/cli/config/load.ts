/**
 * Where the gateway's configuration comes from: a JSON or YAML file (`--config`), flags that
 * override it, and REDIS_URL. Flags are folded into the raw object before the one validation
 * pass, with labels so that errors name the flag that set a field.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { type OptionSpec, type Parsed, stringOption, UsageError } from '../args.js';
import { ConfigError, type Fields, type Labels } from './check.js';
import { loadRlsConfig, rlsRules } from './rls.js';
import { checkShadow } from './rules.js';
import { type GatewayConfig, parseGatewayConfig } from './schema.js';
import { parseYaml } from './yaml.js';

/** Flags that choose the rules and the store: shared by serve, inspect and reset. */
export const STORE_FLAGS = {
  config: { type: 'string', short: 'c' },
  limit: { type: 'string', multiple: true },
  algorithm: { type: 'string' },
  burst: { type: 'string' },
  concurrency: { type: 'string' },
  redis: { type: 'string' },
  'redis-cluster': { type: 'string' },
  prefix: { type: 'string' },
} as const satisfies OptionSpec;

export const STORE_FLAGS_HELP = `  -c, --config FILE         JSON or YAML config file (see the README); flags override it
  --limit RATE              a rule such as 120/1m, 10/s, 5000/1h; repeat for several (default 60/1m)
  --algorithm NAME          algorithm of the --limit rules: sliding-window (default), fixed-window,
                            sliding-log, token-bucket, gcra
  --burst N                 capacity of token-bucket and gcra --limit rules (default: the limit)
  --concurrency N           at most N requests in flight per client (or API key) across every
                            gateway on the store, in every plan without its own concurrency
  --redis URL               Redis store (default: REDIS_URL, else the in-memory store)
  --redis-cluster NODES     Redis Cluster seed nodes: host:port,host:port
  --prefix PREFIX           namespace of the Redis keys (default floodgate)`;

/** Serve-only flags, each overriding one config field. */
const FIELD_FLAGS: Record<string, string> = {
  upstream: 'upstream',
  host: 'host',
  'on-store-error': 'onStoreError',
  'api-key-header': 'apiKeyHeader',
  'priority-header': 'priorityHeader',
  'shutdown-timeout': 'shutdownTimeout',
  'upstream-timeout': 'upstreamTimeout',
  'client-timeout': 'clientTimeout',
};

/** Reads and validates the configuration from `--config`, the flags and the environment. */
export async function loadConfig(
  parsed: Parsed,
  env: NodeJS.ProcessEnv = process.env,
): Promise<GatewayConfig> {
  const file = stringOption(parsed, 'config');
  const raw: Fields = file === undefined ? {} : await readConfigFile(file);
  const labels: Labels = {};
  applyFlags(raw, labels, parsed, env);
  let config: GatewayConfig;
  try {
    config = parseGatewayConfig(raw, labels);
  } catch (error) {
    if (error instanceof ConfigError && file !== undefined && !error.message.startsWith('--')) {
      throw new ConfigError(`${file}: ${error.message}`);
    }
    throw error;
  }
  if (config.grpc === undefined) return config;
  const rls = await loadRlsConfig(config.grpc.config, labels['grpc.config'] ?? 'grpc.config');
  // As for the gateway's own rules (schema.ts): shadow cannot take in rules that lease.
  if (config.shadow) {
    checkShadow(
      rlsRules(rls),
      labels.shadow ?? 'shadow',
      `Envoy rate limits (quota_lease in ${config.grpc.config})`,
    );
  }
  return { ...config, rls };
}

async function readConfigFile(file: string): Promise<Fields> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `--config: cannot read ${file}${code === 'ENOENT' ? ': no such file' : `: ${code}`}`,
    );
  }
  const extension = extname(file).toLowerCase();
  let value: unknown;
  if (extension === '.json') {
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ConfigError(`${file}: invalid JSON: ${(error as Error).message}`);
    }
  } else {
    value = await parseYaml(
      text,
      file,
      "YAML configs need the 'yaml' package (npm install yaml), or use a .json file",
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`${file}: expected a mapping of settings at the top level`);
  }
  return value as Fields;
}

/** `--grpc-port` and `--grpc-config` fold into `grpc: { port, config }`. */
function applyGrpcFlags(raw: Fields, labels: Labels, parsed: Parsed): void {
  const port = stringOption(parsed, 'grpc-port');
  const config = stringOption(parsed, 'grpc-config');
  if (port === undefined && config === undefined) return;
  const grpc: Fields = typeof raw.grpc === 'object' && raw.grpc !== null ? { ...(raw.grpc as Fields) } : {};
  if (port !== undefined) {
    grpc.port = /^\d+$/.test(port) ? Number(port) : port;
    labels['grpc.port'] = '--grpc-port';
  }
  if (config !== undefined) {
    grpc.config = config;
    labels['grpc.config'] = '--grpc-config';
  }
  raw.grpc = grpc;
}

function applyFlags(raw: Fields, labels: Labels, parsed: Parsed, env: NodeJS.ProcessEnv): void {
  const limits = parsed.values.limit as string[] | undefined;
  const algorithm = stringOption(parsed, 'algorithm');
  const burst = stringOption(parsed, 'burst');
  if (limits !== undefined && limits.length > 0) {
    if (raw.plans !== undefined) throw new UsageError('--limit: the config defines plans; set limits there');
    raw.rules = limits.map((limit) => ({
      limit,
      ...(algorithm !== undefined ? { algorithm } : {}),
      ...(burst !== undefined ? { burst: Number(burst) } : {}),
    }));
    labels.rules = '--limit';
  } else if (algorithm !== undefined || burst !== undefined) {
    throw new UsageError(
      `--${algorithm !== undefined ? 'algorithm' : 'burst'} goes with --limit, e.g. --limit 120/1m`,
    );
  }

  const slots = stringOption(parsed, 'concurrency');
  if (slots !== undefined) {
    raw.concurrency = /^\d+$/.test(slots) ? Number(slots) : slots;
    labels.concurrency = '--concurrency';
  }

  const store: Fields =
    typeof raw.store === 'object' && raw.store !== null ? { ...(raw.store as Fields) } : {};
  const redis = stringOption(parsed, 'redis');
  const cluster = stringOption(parsed, 'redis-cluster');
  if (redis !== undefined && cluster !== undefined) {
    throw new UsageError('--redis and --redis-cluster cannot be used together');
  }
  if (redis !== undefined || cluster !== undefined) {
    delete store.redis;
    delete store.cluster;
  }
  if (redis !== undefined) {
    store.redis = redis;
    labels['store.redis'] = '--redis';
  } else if (cluster !== undefined) {
    store.cluster = cluster
      .split(',')
      .map((seed) => seed.trim())
      .filter(Boolean);
    labels['store.cluster'] = '--redis-cluster';
  } else if (env.REDIS_URL) {
    delete store.cluster;
    store.redis = env.REDIS_URL;
    labels['store.redis'] = 'REDIS_URL';
  }
  const prefix = stringOption(parsed, 'prefix');
  if (prefix !== undefined) {
    store.prefix = prefix;
    labels['store.prefix'] = '--prefix';
  }
  const timeout = stringOption(parsed, 'store-timeout');
  if (timeout !== undefined) {
    store.timeout = timeout;
    labels['store.timeout'] = '--store-timeout';
  }
  if (raw.store !== undefined || Object.keys(store).length > 0) raw.store = store;

  for (const [flag, field] of Object.entries(FIELD_FLAGS)) {
    const value = stringOption(parsed, flag);
    if (value === undefined) continue;
    raw[field] = field === 'apiKeyHeader' && value === 'false' ? false : value;
    labels[field] = `--${flag}`;
  }
  if (parsed.values.shadow === true) {
    raw.shadow = true;
    labels.shadow = '--shadow';
  }
  // The flag turns it on with the defaults; a config file's own settings stay.
  if (parsed.values.adaptive === true && (raw.adaptive === undefined || raw.adaptive === false)) {
    raw.adaptive = true;
    labels.adaptive = '--adaptive';
  }
  const adminHost = stringOption(parsed, 'admin-host');
  const adminPort = stringOption(parsed, 'admin-port');
  if (adminHost !== undefined || adminPort !== undefined) {
    const admin: Fields =
      typeof raw.admin === 'object' && raw.admin !== null ? { ...(raw.admin as Fields) } : {};
    if (adminHost !== undefined) {
      admin.host = adminHost;
      labels['admin.host'] = '--admin-host';
    }
    if (adminPort !== undefined) {
      admin.port = /^\d+$/.test(adminPort) ? Number(adminPort) : adminPort;
      labels['admin.port'] = '--admin-port';
    }
    raw.admin = admin;
  }
  applyGrpcFlags(raw, labels, parsed);
  const concurrency = stringOption(parsed, 'client-concurrency');
  if (concurrency !== undefined) {
    raw.clientConcurrency = /^\d+$/.test(concurrency) ? Number(concurrency) : concurrency;
    labels.clientConcurrency = '--client-concurrency';
  }
  const port = stringOption(parsed, 'port');
  if (port !== undefined) {
    raw.port = /^\d+$/.test(port) ? Number(port) : port;
    labels.port = '--port';
  }
  const headers = stringOption(parsed, 'headers');
  if (headers !== undefined) {
    raw.headers =
      headers === 'false' || headers === 'none'
        ? false
        : headers.includes(',')
          ? headers.split(',')
          : headers;
    labels.headers = '--headers';
  }
  const trustProxy = stringOption(parsed, 'trust-proxy');
  if (trustProxy !== undefined) {
    raw.trustProxy =
      trustProxy === 'true'
        ? true
        : trustProxy === 'false'
          ? false
          : /^\d+$/.test(trustProxy)
            ? Number(trustProxy)
            : trustProxy;
    labels.trustProxy = '--trust-proxy';
  }
}
