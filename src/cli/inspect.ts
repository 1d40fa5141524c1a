/**
 * `floodgate inspect KEY`: a key's state under every rule of the gateway's configuration,
 * without consuming anything, and its Redis keys with their TTLs.
 */
import type { OverrideSpec } from '../index.js';
import { BLOCK_SUFFIX, decodeOverride, formatLocal, keyHead, overrideKey } from '../internal.js';
import { EXIT_OK, RuntimeFailure } from './args.js';
import { STORE_FLAGS_HELP } from './config/load.js';
import type { GatewayConfig } from './config/schema.js';
import { knownRules, limiterFor, prepare, redisKeys } from './operate.js';
import { describeOverride } from './override.js';
import type { RedisConnection } from './redis.js';
import { type RuleFields, ruleTerms } from './serve/describe.js';
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

export async function inspectCommand(argv: readonly string[]): Promise<number> {
  const setup = await prepare('inspect', argv);
  if (setup.help) {
    process.stdout.write(INSPECT_HELP);
    return EXIT_OK;
  }
  const { key, config, plan, cost, json, connection } = setup;
  try {
    const rows = [];
    const terms: string[] = [];
    for (const known of knownRules(config, plan)) {
      const decision = await limiterFor(config, connection, known.options).peek(key, { cost });
      if (decision.degraded !== false)
        throw new RuntimeFailure(`Redis did not answer (${decision.degraded})`);
      const keys = [];
      let blockedForMs: number | null = null;
      for (const name of redisKeys(config, key, known.resolved)) {
        const ttl = await connection.client.pttl(name);
        keys.push({ key: name, exists: ttl !== -2, ttlMs: ttl >= 0 ? ttl : null });
        // A block's key lives forgetAfter past the block's end (see algorithms/block.ts).
        const block = known.resolved.block;
        if (block !== undefined && name.endsWith(BLOCK_SUFFIX) && ttl - block.forgetMs > 0) {
          blockedForMs = ttl - block.forgetMs;
        }
      }
      // A calendar rule's period now, in its own time zone (on this machine's clock).
      const { periods } = known.resolved;
      const span = periods?.at(Date.now());
      const period =
        periods === undefined || span === undefined
          ? null
          : {
              period: periods.period,
              timeZone: periods.timeZone,
              start: formatLocal(periods.timeZone, span.start),
              end: formatLocal(periods.timeZone, span.end),
              startMs: span.start,
              endMs: span.end,
            };
      // The table's limit: as serve --check lists the rule, with the slice size the limiter resolved.
      terms.push(ruleTerms({ ...known.options, quotaLease: known.resolved.quotaLease } as RuleFields));
      rows.push({
        rule: known.resolved.name,
        algorithm: known.resolved.algorithm.name,
        limit: known.resolved.limit,
        windowMs: known.resolved.windowMs,
        capacity: known.resolved.capacity,
        counts: known.resolved.counts,
        // Slices a gateway holds count as used here: peeks never take or use one.
        quotaLease: known.resolved.quotaLease ?? null,
        plans: [...known.plans],
        routes: known.everyRoute ? [] : [...known.routes],
        allowed: decision.allowed,
        remaining: decision.remaining,
        resetMs: decision.resetMs,
        retryAfterMs: Number.isFinite(decision.retryAfterMs) ? decision.retryAfterMs : null,
        blockedForMs,
        period,
        redisKeys: keys,
      });
    }
    const override = await readOverride(connection, config, key);
    if (json) {
      const report = { key, prefix: config.prefix, store: connection.label, cost, override, rules: rows };
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
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
          'blocked for',
        ],
        rows.map((row, i) => [
          row.rule,
          row.algorithm,
          terms[i] as string,
          describeScope(row.plans, row.routes, config),
          row.allowed ? 'allowed' : 'denied',
          String(row.remaining),
          seconds(row.resetMs),
          row.allowed
            ? '-'
            : row.retryAfterMs === null
              ? 'never (cost > capacity)'
              : seconds(row.retryAfterMs),
          row.blockedForMs === null ? '-' : seconds(row.blockedForMs),
        ]),
        ['left', 'left', 'left', 'left', 'left', 'right', 'right', 'right', 'right'],
      ),
      '',
      `Override: ${
        override === null
          ? 'none'
          : `${override.override === undefined ? `unreadable (${override.value})` : describeOverride(override.override)}${override.expiresInMs === null ? '' : `, expires in ${seconds(override.expiresInMs)}`} (the rules above already apply it)`
      }`,
      '',
    );
    for (const row of rows) {
      if (row.period !== null) {
        lines.push(
          `Period of ${row.rule}: ${row.period.period} in ${row.period.timeZone}, ${row.period.start} to ${row.period.end}`,
        );
      }
    }
    if (rows.some((row) => row.period !== null)) lines.push('');
    lines.push('Redis keys:');
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

/** The key's runtime override, as stored beside its rule state ("expiresAt:value"), or null. */
async function readOverride(connection: RedisConnection, config: GatewayConfig, key: string) {
  const name = overrideKey(keyHead(config.prefix, key));
  const [stored, ttl] = await Promise.all([connection.client.get(name), connection.client.pttl(name)]);
  const match = stored === null ? null : /^(\d+):(.*)$/s.exec(stored);
  if (match === null) return null;
  let override: OverrideSpec | undefined;
  try {
    override = decodeOverride(match[2] as string);
  } catch {
    override = undefined;
  }
  return { override, value: match[2] as string, expiresInMs: match[1] === '0' || ttl < 0 ? null : ttl };
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
