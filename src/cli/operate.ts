/**
 * `floodgate inspect KEY` and `floodgate reset KEY`: operator commands against the shared store,
 * with the same rules as `serve` (flags or config file). inspect peeks (consumes nothing) under
 * every rule and lists the key's Redis keys with their TTLs; reset forgets the key everywhere.
 */
import { ALGORITHMS } from '../algorithms/index.js';
import { keyHead } from '../keys.js';
import { createLimiter } from '../limiter.js';
import { formatDuration, type ResolvedRule, type RuleOptions, resolveRules } from '../rules.js';
import { redisStore } from '../stores/redis.js';
import {
  EXIT_OK,
  integerOption,
  parseCommandArgs,
  RuntimeFailure,
  stringOption,
  UsageError,
} from './args.js';
import { loadConfig, STORE_FLAGS, STORE_FLAGS_HELP } from './config/load.js';
import type { GatewayConfig } from './config/schema.js';
import { connectRedis, type RedisConnection } from './redis.js';
import { renderTable } from './table.js';

export const INSPECT_HELP = `Usage: floodgate inspect KEY [options]

Shows KEY's state under every rule of the gateway's configuration, without consuming anything:
whether a request would pass, what remains, when the quota resets, how long to wait; and the
key's Redis keys with their TTLs. KEY is the limiter key as the store knows it; the HTTP
adapters (and serve) key a request by 'key:<hashed API key>' or 'ip:<address>': use --api-key or
--ip to have it computed.

Options:
${STORE_FLAGS_HELP}
  --ip ADDRESS              instead of KEY: the key the HTTP adapters give this client address
  --api-key KEY             instead of KEY: the key they give this API key (hashed as they hash it,
                            with FLOODGATE_API_KEY_SECRET when set; never printed)
  --plan NAME               only the rules of this plan (and of the routes under it)
  --cost N                  the cost of the request to ask about (default 1)
  --json                    print JSON
  -h, --help                show this help

Exit codes: 0 ok, 1 runtime failure (e.g. Redis unreachable), 2 usage or configuration error.
`;

export const RESET_HELP = `Usage: floodgate reset KEY [options]

Forgets KEY's state under every rule of the gateway's configuration (all plans and routes), so
its next request starts with a full quota.

Options:
${STORE_FLAGS_HELP}
  --ip ADDRESS              instead of KEY: the key the HTTP adapters give this client address
  --api-key KEY             instead of KEY: the key they give this API key (never printed)
  --json                    print JSON
  -h, --help                show this help

Exit codes: 0 ok, 1 runtime failure (e.g. Redis unreachable), 2 usage or configuration error.
`;

/** A rule of the configuration with where it applies. */
interface KnownRule {
  resolved: ResolvedRule;
  options: RuleOptions;
  plans: Set<string>;
  /** Routes with this rule of their own; empty when it is a plan's rule (every route). */
  routes: Set<string>;
  everyRoute: boolean;
}

/** Every distinct rule (by name and algorithm, which is what the Redis keys are made of). */
export function knownRules(config: GatewayConfig, plan?: string): KnownRule[] {
  const rules = new Map<string, KnownRule>();
  const add = (options: RuleOptions, planName: string, route?: string) => {
    if (plan !== undefined && planName !== plan) return;
    const [resolved] = resolveRules([options]) as [ResolvedRule];
    const id = resolved.keyTail;
    let known = rules.get(id);
    if (known === undefined) {
      known = { resolved, options, plans: new Set(), routes: new Set(), everyRoute: false };
      rules.set(id, known);
    }
    known.plans.add(planName);
    if (route === undefined) known.everyRoute = true;
    else known.routes.add(route);
  };
  for (const [planName, list] of config.plans) for (const rule of list) add(rule, planName);
  for (const route of config.routes) {
    for (const [planName, list] of route.rules) for (const rule of list) add(rule, planName, route.name);
  }
  return [...rules.values()];
}

async function prepare(command: 'inspect' | 'reset', argv: readonly string[]) {
  const parsed = parseCommandArgs(
    command,
    argv,
    {
      ...STORE_FLAGS,
      json: { type: 'boolean' },
      ip: { type: 'string' },
      'api-key': { type: 'string' },
      ...(command === 'inspect' ? { plan: { type: 'string' }, cost: { type: 'string' } } : {}),
    },
    1,
  );
  if (parsed.values.help === true) return { help: true as const };
  const ip = stringOption(parsed, 'ip');
  const apiKey = stringOption(parsed, 'api-key');
  const given = [parsed.positionals[0], ip, apiKey].filter((value) => value !== undefined);
  if (given.length !== 1 || given[0] === '') {
    throw new UsageError(
      `floodgate ${command}: give the KEY to ${command} (or --ip ADDRESS, or --api-key KEY), once`,
    );
  }
  const config = await loadConfig(parsed);
  const key = ip !== undefined || apiKey !== undefined ? await adapterKey(ip, apiKey) : (given[0] as string);
  if (config.redis === undefined) {
    throw new UsageError(
      `${command} needs the shared store: give --redis URL, --redis-cluster NODES or REDIS_URL (the in-memory store lives inside one serve process)`,
    );
  }
  const plan = stringOption(parsed, 'plan');
  if (plan !== undefined && !config.plans.has(plan)) {
    throw new UsageError(`--plan: '${plan}' is not one of ${[...config.plans.keys()].join(', ')}`);
  }
  const costText = stringOption(parsed, 'cost');
  const cost = costText === undefined ? 1 : integerOption(costText, '--cost', 1, Number.MAX_SAFE_INTEGER);
  const connection = await connectRedis(config.redis);
  return { help: false as const, key, config, plan, cost, json: parsed.values.json === true, connection };
}

/** The key the HTTP adapters give a client address or an API key (src/http/keys.ts). */
async function adapterKey(ip: string | undefined, apiKey: string | undefined): Promise<string> {
  let keys: {
    hashApiKey(apiKey: string, secret: Buffer | undefined): string;
    addressKey(address: string | undefined, ipv6Subnet: number): string;
  };
  try {
    const specifier: string = '../http/keys.js';
    keys = await import(specifier);
  } catch {
    throw new RuntimeFailure(
      '--ip and --api-key need the HTTP adapters (floodgate/node, floodgate/fastify...)',
    );
  }
  if (ip !== undefined) {
    const key = keys.addressKey(ip, 64);
    if (key === 'ip:unknown') throw new UsageError(`--ip: '${ip}' is not an IP address`);
    return key;
  }
  const secret = process.env.FLOODGATE_API_KEY_SECRET;
  return keys.hashApiKey(apiKey as string, secret ? Buffer.from(secret, 'utf8') : undefined);
}

function limiterFor(config: GatewayConfig, connection: RedisConnection, options: RuleOptions) {
  return createLimiter({
    rules: [options],
    store: redisStore({ client: connection.client }),
    prefix: config.prefix,
    timeout: '5s',
    breaker: false,
    denyCache: false,
  });
}

function redisKeys(config: GatewayConfig, key: string, rule: ResolvedRule): string[] {
  const head = keyHead(config.prefix, key);
  return ALGORITHMS[rule.algorithm.name].keySuffixes.map((suffix) => head + rule.keyTail + suffix);
}

export async function inspectCommand(argv: readonly string[]): Promise<number> {
  const setup = await prepare('inspect', argv);
  if (setup.help) {
    process.stdout.write(INSPECT_HELP);
    return EXIT_OK;
  }
  const { key, config, plan, cost, json, connection } = setup;
  try {
    const rows = [];
    for (const known of knownRules(config, plan)) {
      const decision = await limiterFor(config, connection, known.options).peek(key, { cost });
      if (decision.degraded !== false)
        throw new RuntimeFailure(`Redis did not answer (${decision.degraded})`);
      const keys = [];
      for (const name of redisKeys(config, key, known.resolved)) {
        const ttl = await connection.client.pttl(name);
        keys.push({ key: name, exists: ttl !== -2, ttlMs: ttl >= 0 ? ttl : null });
      }
      rows.push({
        rule: known.resolved.name,
        algorithm: known.resolved.algorithm.name,
        limit: known.resolved.limit,
        windowMs: known.resolved.windowMs,
        capacity: known.resolved.capacity,
        plans: [...known.plans],
        routes: known.everyRoute ? [] : [...known.routes],
        allowed: decision.allowed,
        remaining: decision.remaining,
        resetMs: decision.resetMs,
        retryAfterMs: Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : null,
        redisKeys: keys,
      });
    }
    if (json) {
      process.stdout.write(
        `${JSON.stringify({ key, prefix: config.prefix, store: connection.label, cost, rules: rows }, null, 2)}\n`,
      );
      return EXIT_OK;
    }
    const lines = [
      `key ${JSON.stringify(key)} on ${connection.label} (prefix ${config.prefix}), asking about cost ${cost}`,
      '',
    ];
    lines.push(
      renderTable(
        [
          'rule',
          'algorithm',
          'limit',
          'applies to',
          'a request now',
          'remaining after',
          'reset in',
          'retry in',
        ],
        rows.map((row) => [
          row.rule,
          row.algorithm,
          `${row.limit}/${formatDuration(row.windowMs)}${row.capacity !== row.limit ? ` burst ${row.capacity}` : ''}`,
          describeScope(row.plans, row.routes, config),
          row.allowed ? 'allowed' : 'denied',
          String(row.remaining),
          seconds(row.resetMs),
          row.allowed
            ? '-'
            : row.retryAfterMs === null
              ? 'never (cost > capacity)'
              : seconds(row.retryAfterMs),
        ]),
        ['left', 'left', 'left', 'left', 'left', 'right', 'right', 'right'],
      ),
      '',
      'Redis keys:',
    );
    for (const row of rows) {
      for (const redisKey of row.redisKeys) {
        lines.push(
          `  ${redisKey.key}  ${redisKey.exists ? (redisKey.ttlMs === null ? 'no TTL' : `TTL ${seconds(redisKey.ttlMs)}`) : '(absent)'}`,
        );
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    return EXIT_OK;
  } finally {
    await connection.close();
  }
}

export async function resetCommand(argv: readonly string[]): Promise<number> {
  const setup = await prepare('reset', argv);
  if (setup.help) {
    process.stdout.write(RESET_HELP);
    return EXIT_OK;
  }
  const { key, config, json, connection } = setup;
  try {
    const rules = knownRules(config);
    let deleted = 0;
    for (const known of rules) {
      for (const name of redisKeys(config, key, known.resolved)) {
        deleted += (await connection.client.exists(name)) ? 1 : 0;
      }
      await limiterFor(config, connection, known.options).reset(key);
    }
    const names = rules.map((known) => known.resolved.name);
    if (json) {
      process.stdout.write(
        `${JSON.stringify({ key, prefix: config.prefix, store: connection.label, rules: names, deletedKeys: deleted })}\n`,
      );
    } else {
      process.stdout.write(
        `reset ${JSON.stringify(key)} under ${names.length} rule${names.length === 1 ? '' : 's'} (${names.join(', ')}): ${deleted} Redis key${deleted === 1 ? '' : 's'} deleted\n`,
      );
    }
    return EXIT_OK;
  } finally {
    await connection.close();
  }
}

function describeScope(plans: string[], routes: string[], config: GatewayConfig): string {
  const planText = config.tiers === undefined ? '' : `plan ${plans.join(', ')}`;
  const routeText = routes.length === 0 ? 'all routes' : `route ${routes.join(', ')}`;
  return planText === '' ? routeText : `${planText}; ${routeText}`;
}

function seconds(ms: number): string {
  if (ms === 0) return '0s';
  return ms < 10_000 ? `${(ms / 1000).toFixed(3).replace(/\.?0+$/, '')}s` : `${Math.ceil(ms / 1000)}s`;
}
