/**
 * `floodgate override set|clear|list`: operators give one key other rules, or block it, in the
 * shared store, without a redeploy; every gateway on that store applies it from its next check
 * of the key. Built on the core's override admin (createOverrideAdmin).
 */
import { createOverrideAdmin, type Override, type RuleOptions, redisStore } from '../index.js';
import { formatDuration } from '../internal.js';
import {
  asUsageError,
  durationOption,
  EXIT_OK,
  type Parsed,
  parseCommandArgs,
  stringOption,
  UsageError,
} from './args.js';
import { loadConfig, STORE_FLAGS, STORE_FLAGS_HELP } from './config/load.js';
import { parseRuleList } from './config/rules.js';
import { adapterKey } from './operate.js';
import { connectRedis } from './redis.js';
import { renderTable } from './table.js';

export const OVERRIDE_HELP = `Usage: floodgate override set KEY (--limit RATE... | --block | --plan NAME) [--ttl DURATION]
       floodgate override clear KEY
       floodgate override list [--json]

Gives one key other rules, or blocks it, in the shared store: every gateway and limiter on that
store (same prefix) applies it from its next check of the key. KEY may be given as --ip ADDRESS
or --api-key KEY to use the key the HTTP adapters give that client.

Options:
${STORE_FLAGS_HELP.split('\n')
  .filter((line) => !/--limit|--algorithm|--burst|sliding-log, token/.test(line))
  .join('\n')}
  --limit RATE              set: the key's rules instead of its plan's (repeat for several)
  --algorithm NAME          set: algorithm of those rules (default sliding-window)
  --burst N                 set: capacity of token-bucket and gcra rules
  --block                   set: deny every request of the key
  --plan NAME               set: put the key on another plan, whatever its tier header says
  --ttl DURATION            set: remove the override after this long (default: until cleared)
  --ip ADDRESS              instead of KEY: the key the HTTP adapters give this client address
  --api-key KEY             instead of KEY: the key they give this API key (never printed)
  --json                    list: print JSON
  -h, --help                show this help

Exit codes: 0 ok, 1 runtime failure (e.g. Redis unreachable), 2 usage or configuration error.
`;

const OPTIONS = {
  ...STORE_FLAGS,
  block: { type: 'boolean' },
  plan: { type: 'string' },
  ttl: { type: 'string' },
  ip: { type: 'string' },
  'api-key': { type: 'string' },
  json: { type: 'boolean' },
} as const;

const ACTIONS = ['set', 'clear', 'list'];

export async function overrideCommand(argv: readonly string[]): Promise<number> {
  const parsed = parseCommandArgs('override', argv, OPTIONS, 2);
  if (parsed.values.help === true) {
    process.stdout.write(OVERRIDE_HELP);
    return EXIT_OK;
  }
  const [action, keyArgument] = parsed.positionals;
  if (action === undefined || !ACTIONS.includes(action)) {
    throw new UsageError(
      `floodgate override: give one of ${ACTIONS.join(', ')}${action ? `, not '${action}'` : ''}`,
    );
  }
  const override = action === 'set' ? overrideFrom(parsed) : undefined;
  const ttl = stringOption(parsed, 'ttl');
  if (ttl !== undefined && action !== 'set') throw new UsageError('--ttl goes with override set');
  const ttlMs = ttl === undefined ? undefined : durationOption(ttl, '--ttl');

  // The store and prefix come from the config and flags; --limit & co. describe the override here.
  const { limit: _limit, algorithm: _algorithm, burst: _burst, ...storeValues } = parsed.values;
  const config = await loadConfig({ values: storeValues, positionals: [] });
  if (config.redis === undefined) {
    throw new UsageError(
      'override needs the shared store: give --redis URL, --redis-cluster NODES or REDIS_URL',
    );
  }

  let key: string | undefined;
  if (action !== 'list') {
    const ip = stringOption(parsed, 'ip');
    const apiKey = stringOption(parsed, 'api-key');
    const given = [keyArgument, ip, apiKey].filter((value) => value !== undefined);
    if (given.length !== 1 || given[0] === '') {
      throw new UsageError(
        `floodgate override ${action}: give the KEY (or --ip ADDRESS, or --api-key KEY), once`,
      );
    }
    key = ip !== undefined || apiKey !== undefined ? adapterKey(ip, apiKey) : (given[0] as string);
  } else if (keyArgument !== undefined) {
    throw new UsageError(`floodgate override list: unexpected argument '${keyArgument}'`);
  }

  const connection = await connectRedis(config.redis);
  try {
    const admin = asUsageError(() =>
      createOverrideAdmin({
        store: redisStore({ client: connection.client }),
        prefix: config.prefix,
        ...(config.tiers !== undefined ? { plans: [...config.plans.keys()] } : {}),
      }),
    );
    if (action === 'set') {
      await asUsageErrorAsync(() =>
        admin.set(key as string, override as Override, ttlMs === undefined ? {} : { ttl: ttlMs }),
      );
      process.stdout.write(
        `override of ${JSON.stringify(key)} set: ${describeOverride(override as Override)}${ttlMs === undefined ? ', until cleared' : `, for ${formatDuration(ttlMs)}`}\n`,
      );
    } else if (action === 'clear') {
      await admin.clear(key as string);
      process.stdout.write(`override of ${JSON.stringify(key)} cleared\n`);
    } else {
      const entries = await admin.list();
      if (parsed.values.json === true) {
        process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
      } else if (entries.length === 0) {
        process.stdout.write(`no overrides under prefix ${config.prefix}\n`);
      } else {
        process.stdout.write(
          `${renderTable(
            ['key', 'override', 'expires in'],
            entries.map((entry) => [
              entry.key,
              entry.override === undefined ? `unreadable: ${entry.value}` : describeOverride(entry.override),
              entry.expiresInMs === undefined
                ? 'never'
                : formatDuration(Math.max(1, Math.ceil(entry.expiresInMs / 1000)) * 1000),
            ]),
            ['left', 'left', 'right'],
          )}\n`,
        );
      }
    }
    return EXIT_OK;
  } finally {
    await connection.close();
  }
}

/** The override `set` was asked for: rules from --limit, a block, or a plan; exactly one. */
function overrideFrom(parsed: Parsed): Override {
  const limits = parsed.values.limit as string[] | undefined;
  const plan = stringOption(parsed, 'plan');
  const block = parsed.values.block === true;
  const kinds = [limits !== undefined, plan !== undefined, block].filter(Boolean).length;
  if (kinds !== 1) throw new UsageError('set: give exactly one of --limit RATE, --block or --plan NAME');
  if (block) return { block: true };
  if (plan !== undefined) return plan;
  const algorithm = stringOption(parsed, 'algorithm');
  const burst = stringOption(parsed, 'burst');
  return parseRuleList(
    (limits as string[]).map((limit) => ({
      limit,
      ...(algorithm !== undefined ? { algorithm } : {}),
      ...(burst !== undefined ? { burst: Number(burst) } : {}),
    })),
    '--limit',
  );
}

/** An override in a few words: `blocked`, `plan pro`, `sliding-window 10/1m + gcra 5/1s burst 10`. */
export function describeOverride(override: Override | { rules: RuleOptions[] } | { plan: string }): string {
  if (typeof override === 'string') return `plan ${override}`;
  if ('block' in override) return 'blocked';
  if ('plan' in override && typeof override.plan === 'string') return `plan ${override.plan}`;
  const rules = ('rules' in override ? override.rules : override) as RuleOptions | readonly RuleOptions[];
  return (Array.isArray(rules) ? rules : [rules])
    .map((rule: RuleOptions) => {
      const window = typeof rule.window === 'number' ? formatDuration(rule.window) : String(rule.window);
      return `${rule.algorithm} ${rule.limit}/${window}${rule.burst !== undefined ? ` burst ${rule.burst}` : ''}`;
    })
    .join(' + ');
}

async function asUsageErrorAsync<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new UsageError(error.message);
    throw error;
  }
}
