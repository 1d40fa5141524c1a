/**
 * How the gateway describes its configuration: the summary in the `listening` and `reloaded` log
 * lines, and the full listing of `serve --check`.
 */
import { formatDuration } from '../../internal.js';
import { DEFAULT_PLAN, type GatewayConfig } from '../config/schema.js';
import { redactUrl } from '../redis.js';

export function summary(config: GatewayConfig) {
  return {
    plans: Object.fromEntries(
      [...config.plans].map(([plan, rules]) => [plan, rules.map((rule) => ruleText(rule))]),
    ),
    ...(config.tiers !== undefined
      ? { tierHeader: config.tiers.header, defaultPlan: config.tiers.default }
      : {}),
    routes: config.routes.length,
    onStoreError: config.onStoreError,
  };
}

export function ruleText(rule: {
  name?: string;
  algorithm: string;
  limit: number;
  window?: unknown;
  burst?: number;
  lease?: unknown;
  counts?: string;
  quotaLease?: boolean | { max?: number };
}): string {
  const name = rule.name ? `${rule.name}: ` : '';
  // Cost is the default unit; a rule that counts requests says so (a route's cost takes 1 there).
  const counts = rule.counts === 'requests' ? ' counts requests' : '';
  if (rule.algorithm === 'concurrency') {
    return `${name}concurrency ${rule.limit}${rule.lease === undefined ? '' : ` lease ${durationText(rule.lease)}`}${counts}`;
  }
  const lease = rule.quotaLease
    ? ` quotaLease${rule.quotaLease !== true && rule.quotaLease.max !== undefined ? ` max ${rule.quotaLease.max}` : ''}`
    : '';
  return `${name}${rule.algorithm} ${rule.limit}/${durationText(rule.window)}${rule.burst ? ` burst ${rule.burst}` : ''}${counts}${lease}`;
}

function durationText(value: unknown): string {
  return typeof value === 'number' ? formatDuration(value) : String(value);
}

/** Risks the configuration accepts on purpose: printed by `serve --check`, logged at start. */
export function configWarnings(config: GatewayConfig): string[] {
  const tiers = config.tiers;
  if (tiers?.trust !== 'header') return [];
  return [
    `warning: tiers.trust: header: any client picks its own plan by sending ${tiers.header}: <plan name>; list API keys in tiers.keys unless something before the gateway sets that header`,
  ];
}

/** The resolved configuration, for `serve --check`. */
export function describeConfig(config: GatewayConfig): string {
  const lines = [
    `listen      ${config.host}:${config.port}`,
    `admin       ${config.admin === undefined ? 'off' : `${config.admin.host}:${config.admin.port} (/metrics, /healthz)`}`,
    `upstream    ${config.upstream === undefined ? 'demo API' : redactUrl(config.upstream.href)}`,
    `store       ${config.redis === undefined ? 'memory' : 'url' in config.redis ? redactUrl(config.redis.url) : `cluster ${config.redis.cluster.join(',')}`} (prefix ${config.prefix}, timeout ${formatDuration(config.storeTimeoutMs)}, on error: ${config.onStoreError})`,
    `headers     ${config.headers === false ? 'none' : [config.headers].flat().join(', ')}`,
    `grpc        ${config.grpc === undefined ? 'off' : `${config.host}:${config.grpc.port}, Envoy rate limit service, ${config.rls?.size ?? 0} domain(s) from ${config.grpc.config}`}`,
    `keys        ${config.tiers?.keys !== undefined && config.apiKeyHeader !== false ? `API keys listed in tiers.keys (header ${config.apiKeyHeader}), else the client address` : 'the client address'}`,
  ];
  if (config.tiers !== undefined) {
    lines.push(
      `tiers       by header ${config.tiers.header}${config.tiers.keys ? ` (${config.tiers.keys.size} keys)` : ' (trust: header, any client picks its plan)'}, default plan ${config.tiers.default}`,
    );
  }
  for (const [plan, rules] of config.plans) {
    lines.push(`plan ${plan}: ${rules.map((rule) => ruleText(rule as never)).join('; ')}`);
  }
  for (const route of config.routes) {
    const methods = route.methods.length === 7 ? '*' : route.methods.join(',');
    if (route.skip) {
      lines.push(`route ${route.name}: ${methods} ${route.path} (not limited)`);
      continue;
    }
    const counting = [
      ...(route.cost !== 1 ? [`cost ${route.cost}`] : []),
      ...(route.count !== 'all' ? [`count ${route.count}`] : []),
      ...(route.settle !== undefined ? [`settle from header ${route.settle.header}`] : []),
    ];
    const cost = counting.length > 0 ? ` (${counting.join(', ')})` : '';
    if (config.tiers === undefined) {
      const rules = route.rules.get(DEFAULT_PLAN) ?? [];
      lines.push(
        `route ${route.name}: ${methods} ${route.path}${cost} -> ${rules.map((rule) => ruleText(rule as never)).join('; ')}`,
      );
      continue;
    }
    lines.push(`route ${route.name}: ${methods} ${route.path}${cost}`);
    for (const [plan, rules] of route.rules) {
      lines.push(`  plan ${plan}: ${rules.map((rule) => ruleText(rule as never)).join('; ')}`);
    }
  }
  return lines.join('\n');
}
