/**
 * What `floodgate inspect` and `floodgate reset` share: the command line (KEY, or the adapters'
 * key forms via --ip/--api-key), the configuration's distinct rules, and the Redis keys of a key.
 */
import { createLimiter, type RuleOptions, redisStore } from '../index.js';
import {
  ALGORITHMS,
  addressKey,
  BLOCK_SUFFIX,
  DEFAULT_IPV6_SUBNET,
  hashApiKey,
  keyHead,
  type ResolvedRule,
  resolveRules,
  UNKNOWN_CLIENT,
} from '../internal.js';
import { integerOption, parseCommandArgs, stringOption, UsageError } from './args.js';
import { loadConfig, STORE_FLAGS } from './config/load.js';
import type { GatewayConfig } from './config/schema.js';
import { connectRedis, type RedisConnection } from './redis.js';

/** A rule of the configuration with where it applies. */
export interface KnownRule {
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

export async function prepare(command: 'inspect' | 'reset', argv: readonly string[]) {
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
  const key = ip !== undefined || apiKey !== undefined ? adapterKey(ip, apiKey) : (given[0] as string);
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

/** The key the HTTP adapters give a client address or an API key (see src/http/request-keys.ts). */
export function adapterKey(ip: string | undefined, apiKey: string | undefined): string {
  if (ip !== undefined) {
    const key = addressKey(ip, DEFAULT_IPV6_SUBNET);
    if (key === UNKNOWN_CLIENT) throw new UsageError(`--ip: '${ip}' is not an IP address`);
    return key;
  }
  const secret = process.env.FLOODGATE_API_KEY_SECRET;
  return hashApiKey(apiKey as string, secret ? Buffer.from(secret, 'utf8') : undefined);
}

export function limiterFor(config: GatewayConfig, connection: RedisConnection, options: RuleOptions) {
  return createLimiter({
    rules: [options],
    store: redisStore({ client: connection.client }),
    prefix: config.prefix,
    timeout: '5s',
    breaker: false,
    denyCache: false,
  });
}

export function redisKeys(config: GatewayConfig, key: string, rule: ResolvedRule): string[] {
  const head = keyHead(config.prefix, key);
  const keys = ALGORITHMS[rule.algorithm.name].keySuffixes.map((suffix) => head + rule.keyTail + suffix);
  return rule.block === undefined ? keys : [...keys, head + rule.keyTail + BLOCK_SUFFIX];
}
