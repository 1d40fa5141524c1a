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

/** A rule as the config file gives it (RuleOptions), or as `inspect` shows a resolved one. */
export interface RuleFields {
  name?: string;
  algorithm: string;
  limit: number;
  window?: unknown;
  burst?: number;
  lease?: unknown;
  counts?: string;
  quotaLease?: boolean | { max?: number };
  block?: unknown;
  shadow?: boolean;
  period?: string;
  timeZone?: string;
  anchor?: string;
  thresholds?: readonly number[];
}

/** `name: algorithm` and the rule's terms (see ruleTerms). */
export function ruleText(rule: RuleFields): string {
  return `${rule.name ? `${rule.name}: ` : ''}${rule.algorithm} ${ruleTerms(rule)}`;
}

/**
 * A rule's limit and what changes how it counts or denies, as the config file spells them:
 * `120/1m burst 20 counts requests quotaLease max 50 block 15m shadow`.
 */
export function ruleTerms(rule: RuleFields): string {
  const size =
    rule.algorithm === 'concurrency'
      ? `${rule.limit}${rule.lease === undefined ? '' : ` lease ${durationText(rule.lease)}`}`
      : rule.period !== undefined
        ? `${rule.limit}/${rule.period} ${rule.timeZone ?? 'UTC'}${rule.anchor === undefined ? '' : ` from ${rule.anchor}`}`
        : `${rule.limit}/${durationText(rule.window)}${rule.burst ? ` burst ${rule.burst}` : ''}`;
  const terms = [size];
  if (rule.thresholds !== undefined) terms.push(`thresholds ${rule.thresholds.join(',')}`);
  // Cost is the default unit; a rule that counts requests says so (a route's cost takes 1 there).
  if (rule.counts === 'requests') terms.push('counts requests');
  if (rule.quotaLease) {
    const max = rule.quotaLease === true ? undefined : rule.quotaLease.max;
    terms.push(max === undefined ? 'quotaLease' : `quotaLease max ${max}`);
  }
  if (rule.block !== undefined) terms.push(`block ${blockText(rule.block)}`);
  if (rule.shadow === true) terms.push('shadow');
  return terms.join(' ');
}

/** A rule's `block`: a duration, or `{ duration, factor, max, forgetAfter }` field by field. */
function blockText(block: unknown): string {
  if (typeof block !== 'object' || block === null) return durationText(block);
  const { duration, factor, max, forgetAfter } = block as Record<string, unknown>;
  return [
    durationText(duration),
    ...(factor === undefined ? [] : [`factor ${factor}`]),
    ...(max === undefined ? [] : [`max ${durationText(max)}`]),
    ...(forgetAfter === undefined ? [] : [`forgetAfter ${durationText(forgetAfter)}`]),
  ].join(' ');
}

function durationText(value: unknown): string {
  return typeof value === 'number' ? formatDuration(value) : String(value);
}

/** How denials are answered: the status, or none at all when `--shadow` makes every rule a shadow rule. */
function denialText(config: GatewayConfig): string {
  if (config.shadow) return 'none: shadow is on (every rule evaluated and counted, never enforced)';
  return config.blockedStatus === 403 ? '429, 403 while the key is blocked' : '429';
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
    `upstream    ${config.upstream === undefined ? 'demo API' : `${redactUrl(config.upstream.href)} (timeout ${formatDuration(config.upstreamTimeoutMs)})`}`,
    `clients     timeout ${formatDuration(config.clientTimeoutMs)} (headers, silence in a body), at most ${config.clientConcurrency} requests in flight upstream per address`,
    `store       ${config.redis === undefined ? 'memory' : 'url' in config.redis ? redactUrl(config.redis.url) : `cluster ${config.redis.cluster.join(',')}`} (prefix ${config.prefix}, timeout ${formatDuration(config.storeTimeoutMs)}, on error: ${config.onStoreError})`,
    `headers     ${config.headers === false ? 'none' : [config.headers].flat().join(', ')}`,
    `denials     ${denialText(config)}`,
    `grpc        ${config.grpc === undefined ? 'off' : `${config.host}:${config.grpc.port}, Envoy rate limit service, ${config.rls?.size ?? 0} domain(s) from ${config.grpc.config}`}`,
    `keys        ${config.tiers?.keys !== undefined && config.apiKeyHeader !== false ? `API keys listed in tiers.keys (header ${config.apiKeyHeader}), else the client address` : 'the client address'}`,
  ];
  if (config.adaptive !== undefined) lines.push(`adaptive    ${adaptiveText(config)}`);
  if (config.tiers !== undefined) {
    lines.push(
      `tiers       by header ${config.tiers.header}${config.tiers.keys ? ` (${config.tiers.keys.size} keys)` : ' (trust: header, any client picks its plan)'}, default plan ${config.tiers.default}`,
    );
  }
  for (const [plan, rules] of config.plans) {
    const priority = config.planPriorities.get(plan);
    lines.push(
      `plan ${plan}${priority === undefined ? '' : ` (${priority})`}: ${rules.map((rule) => ruleText(rule as never)).join('; ')}`,
    );
  }
  for (const route of config.routes) {
    const methods = route.methods.length === 7 ? '*' : route.methods.join(',');
    const ownLimit =
      route.adaptive === undefined ? [] : [`its own adaptive limit (${settingsText(route.adaptive)})`];
    if (route.skip) {
      lines.push(
        `route ${route.name}: ${methods} ${route.path} (not limited${ownLimit.map((text) => `; ${text}`).join('')})`,
      );
      continue;
    }
    const counting = [
      ...(route.priority !== undefined ? [`${route.priority}`] : []),
      ...ownLimit,
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

/** The adaptive limit's settings as given (createAdaptiveLimit's defaults for the rest) and where criticality comes from. */
function adaptiveText(config: GatewayConfig): string {
  const settings = settingsText(config.adaptive ?? {});
  const source =
    config.priorityHeader !== undefined
      ? `criticality from header ${config.priorityHeader}, else the route's, else the plan's, else standard`
      : "criticality from the route, else the plan's, else standard";
  return `concurrency limit following the upstream's latency (${settings}); ${source}`;
}

/** An adaptive limit's settings as given; createAdaptiveLimit's defaults for the rest. */
function settingsText(options: object): string {
  const given = Object.entries(options).map(([name, value]) => `${name} ${value}`);
  return given.length > 0 ? given.join(', ') : 'default settings';
}
