/**
 * envoyproxy/ratelimit's YAML configuration, read as is (`domain`, nested `descriptors` with
 * `key`/`value`, `rate_limit: { unit, requests_per_unit, unlimited, name, replaces }`,
 * `shadow_mode`, `detailed_metric`) from one file or every .yaml/.yml file of a directory, into
 * one descriptor tree per domain. Floodgate's optional extensions: `rate_limit.algorithm`,
 * `rate_limit.burst` and `rate_limit.quota_lease`, and a file's top-level `all_or_nothing`.
 * Unknown keys are refused, as the reference service refuses them.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join as joinPath } from 'node:path';
import type { RuleOptions } from '../../index.js';
import { RATE_ALGORITHM_NAMES, resolveRules } from '../../internal.js';
import {
  arrayAt,
  booleanAt,
  ConfigError,
  core,
  fail,
  integerAt,
  objectAt,
  oneOf,
  stringAt,
} from './check.js';
import { parseYaml } from './yaml.js';

/**
 * The units of RateLimitResponse.RateLimit.Unit, with envoyproxy/ratelimit's windows: fixed spans
 * from the Unix epoch (a week is 7 days from a Thursday, a month 30 days, a year 365).
 */
export const RLS_UNITS = {
  SECOND: 1_000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 7 * 86_400_000,
  MONTH: 30 * 86_400_000,
  YEAR: 365 * 86_400_000,
} as const;
export type RlsUnit = keyof typeof RLS_UNITS;

/** A limit found in the tree: what the service applies to a matching descriptor. */
export interface RlsLimit {
  /** `domain.key_value.key` of the config node, for metrics. */
  readonly path: string;
  readonly unit: RlsUnit | undefined;
  readonly requestsPerUnit: number;
  readonly unlimited: boolean;
  readonly shadowMode: boolean;
  readonly name: string | undefined;
  readonly replaces: readonly string[];
  /** detailed_metric: the request's value is part of the metric label. */
  readonly detailedMetric: boolean;
  /** The one Floodgate rule of this limit (undefined when unlimited, or a limit of 0). */
  readonly rule: RuleOptions | undefined;
}

export interface RlsNode {
  readonly limit: RlsLimit | undefined;
  /** `key` or `key_value` → child. */
  readonly children: ReadonlyMap<string, RlsNode>;
  /** Children whose `key_value` ends in `*`: prefix matches, in config order. */
  readonly wildcards: readonly string[];
}

export interface RlsDomain extends RlsNode {
  /** Floodgate extension: a request over any limit consumes from none. */
  readonly allOrNothing: boolean;
}

export type RlsDomains = ReadonlyMap<string, RlsDomain>;

const FILE_KEYS = ['domain', 'descriptors', 'all_or_nothing'];
const DESCRIPTOR_KEYS = ['key', 'value', 'rate_limit', 'descriptors', 'shadow_mode', 'detailed_metric'];
const LIMIT_KEYS = [
  'unit',
  'requests_per_unit',
  'unlimited',
  'name',
  'replaces',
  'algorithm',
  'burst',
  'quota_lease',
];
/** Depth of nested descriptors, far beyond what Envoy sends, so a config cannot recurse without bound. */
const MAX_DEPTH = 32;

/** Reads `path` (a YAML file or a directory of them) into the domains it defines. */
export async function loadRlsConfig(path: string, label: string): Promise<RlsDomains> {
  const files = await configFiles(path, label);
  const domains = new Map<string, RlsDomain>();
  for (const file of files) {
    const text = await readFile(file, 'utf8');
    const domain = parseRlsFile(
      await parseYaml(text, file, "the Envoy rate limit config needs the 'yaml' package: npm install yaml"),
      file,
    );
    const { name } = domain;
    if (domains.has(name))
      throw new ConfigError(`${file}: domain '${name}' is already defined by another file`);
    domains.set(name, domain.tree);
  }
  return domains;
}

async function configFiles(path: string, label: string): Promise<string[]> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `${label}: cannot read ${path}${code === 'ENOENT' ? ': no such file' : `: ${code}`}`,
    );
  }
  if (!isDirectory) return [path];
  const names = (await readdir(path))
    .filter((name) => ['.yaml', '.yml'].includes(extname(name).toLowerCase()))
    .sort();
  if (names.length === 0) throw new ConfigError(`${label}: ${path} holds no .yaml or .yml file`);
  return names.map((name) => joinPath(path, name));
}

/** One file: its domain's name and descriptor tree. Errors name the file and the field. */
export function parseRlsFile(value: unknown, file: string): { name: string; tree: RlsDomain } {
  try {
    const fields = objectAt(value, '', FILE_KEYS);
    const name = stringAt(fields.domain, 'domain');
    const descriptors = fields.descriptors === undefined ? [] : arrayAt(fields.descriptors, 'descriptors');
    const node = parseLevel(descriptors, 'descriptors', name, 1);
    const allOrNothing =
      fields.all_or_nothing === undefined ? false : booleanAt(fields.all_or_nothing, 'all_or_nothing');
    return { name, tree: { ...node, allOrNothing } };
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`${file}: ${error.message}`);
    throw error;
  }
}

function parseLevel(list: unknown[], where: string, parentPath: string, depth: number): RlsNode {
  if (depth > MAX_DEPTH) fail(where, `descriptors nest deeper than ${MAX_DEPTH} levels`);
  const children = new Map<string, RlsNode>();
  const wildcards: string[] = [];
  for (const [index, item] of list.entries()) {
    const at = `${where}[${index}]`;
    const fields = objectAt(item, at, DESCRIPTOR_KEYS);
    const key = stringAt(fields.key, `${at}.key`);
    const value =
      fields.value === undefined || fields.value === '' ? undefined : scalarAt(fields.value, `${at}.value`);
    const finalKey = value === undefined ? key : `${key}_${value}`;
    if (children.has(finalKey)) fail(at, `duplicate descriptor '${parentPath}.${finalKey}'`);
    const path = `${parentPath}.${finalKey}`;
    const nested = fields.descriptors === undefined ? [] : arrayAt(fields.descriptors, `${at}.descriptors`);
    const shadowMode =
      fields.shadow_mode === undefined ? false : booleanAt(fields.shadow_mode, `${at}.shadow_mode`);
    const detailedMetric =
      fields.detailed_metric === undefined
        ? false
        : booleanAt(fields.detailed_metric, `${at}.detailed_metric`);
    const limit =
      fields.rate_limit === undefined
        ? undefined
        : parseLimit(fields.rate_limit, `${at}.rate_limit`, path, shadowMode, detailedMetric);
    children.set(finalKey, { ...parseLevel(nested, `${at}.descriptors`, path, depth + 1), limit });
    if (finalKey.endsWith('*')) wildcards.push(finalKey);
  }
  return { limit: undefined, children, wildcards };
}

/** YAML may read `value: 10` as a number; the reference service reads it as the string "10". */
function scalarAt(value: unknown, where: string): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return stringAt(value, where);
}

function parseLimit(
  value: unknown,
  where: string,
  path: string,
  shadowMode: boolean,
  detailedMetric: boolean,
): RlsLimit {
  const fields = objectAt(value, where, LIMIT_KEYS);
  const unlimited =
    fields.unlimited === undefined ? false : booleanAt(fields.unlimited, `${where}.unlimited`);
  const name = fields.name === undefined ? undefined : stringAt(fields.name, `${where}.name`);
  const replaces = (fields.replaces === undefined ? [] : arrayAt(fields.replaces, `${where}.replaces`)).map(
    (entry, i) => {
      const replaced = stringAt(
        objectAt(entry, `${where}.replaces[${i}]`, ['name']).name,
        `${where}.replaces[${i}].name`,
      );
      if (replaced === name) fail(`${where}.replaces[${i}]`, 'a limit cannot replace itself');
      return replaced;
    },
  );
  const common = { path, shadowMode, name, replaces, detailedMetric };
  if (unlimited) {
    if (fields.unit !== undefined) fail(`${where}.unit`, 'an unlimited limit takes no unit');
    if (fields.quota_lease !== undefined)
      fail(`${where}.quota_lease`, 'an unlimited limit has no quota to lease');
    return { ...common, unit: undefined, requestsPerUnit: 0, unlimited, rule: undefined };
  }
  const unit = (typeof fields.unit === 'string' ? fields.unit.toUpperCase() : '') as RlsUnit;
  // Case does not matter, as in the reference service; the message shows what the file says.
  if (!Object.hasOwn(RLS_UNITS, unit)) oneOf(fields.unit, `${where}.unit`, Object.keys(RLS_UNITS));
  const requestsPerUnit = integerAt(fields.requests_per_unit, `${where}.requests_per_unit`, 0, 2 ** 32 - 1);
  const algorithm =
    fields.algorithm === undefined
      ? 'fixed-window'
      : oneOf(fields.algorithm, `${where}.algorithm`, RATE_ALGORITHM_NAMES);
  if (requestsPerUnit === 0 && fields.burst !== undefined)
    fail(`${where}.burst`, 'a limit of 0 takes no burst');
  if (requestsPerUnit === 0 && fields.quota_lease !== undefined)
    fail(`${where}.quota_lease`, 'a limit of 0 has no quota to lease');
  // A limit of 0 denies every request without a store call: no rule.
  const rule: RuleOptions | undefined =
    requestsPerUnit === 0
      ? undefined
      : {
          name: unit.toLowerCase(),
          algorithm,
          limit: requestsPerUnit,
          window: RLS_UNITS[unit],
          ...(fields.burst === undefined ? {} : { burst: fields.burst as number }),
          ...(fields.quota_lease === undefined
            ? {}
            : { quotaLease: fields.quota_lease as RuleOptions['quotaLease'] }),
        };
  if (rule !== undefined) checkRule(rule, where);
  return { ...common, unit, requestsPerUnit, unlimited, rule };
}

/**
 * The core's validation of a limit's rule, as for the gateway's own rules (`quota_lease` is the
 * rule's `quotaLease`: true, false or { max }); its messages name the field as this file spells it.
 */
function checkRule(rule: RuleOptions, where: string): void {
  try {
    core(() => resolveRules(rule, where));
  } catch (error) {
    if (error instanceof ConfigError)
      throw new ConfigError(error.message.replaceAll('quotaLease', 'quota_lease'));
    throw error;
  }
}

/** Every rule of the domains' limits (each limit has at most one). */
export function rlsRules(domains: RlsDomains): RuleOptions[] {
  const rules: RuleOptions[] = [];
  const walk = (node: RlsNode) => {
    if (node.limit?.rule !== undefined) rules.push(node.limit.rule);
    for (const child of node.children.values()) walk(child);
  };
  for (const domain of domains.values()) walk(domain);
  return rules;
}
