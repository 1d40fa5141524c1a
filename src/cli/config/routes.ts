/**
 * Routes and the skip list: a method list and a Fastify path pattern each, with their own rules,
 * cost or exemption. Two entries may not claim the same method and path. Patterns match the
 * normalized request path, without regard to case unless a route says `caseSensitive: true`.
 */
import type { AdaptiveLimitOptions, Criticality, RuleOptions } from '../../index.js';
import { resolveRules } from '../../internal.js';
import { parseAdaptive, parsePriority } from './adaptive.js';
import {
  arrayAt,
  booleanAt,
  core,
  type Fields,
  fail,
  HEADER_NAME,
  integerAt,
  join,
  objectAt,
  oneOf,
  stringAt,
} from './check.js';
import { checkLeasing, checkShadow, concurrencyRule, NAME, NAME_HINT, parseRuleList } from './rules.js';

/** Which responses a route's requests count by: `failed` (status >= 400, or no upstream answer), `successful`, or `all`. */
export const COUNTS = ['all', 'failed', 'successful'] as const;
export type RouteCount = (typeof COUNTS)[number];

/** The methods a route may name; `*` (the default) means all of them. */
export const METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'] as const;

export interface RouteSpec {
  /** Where it was defined, for messages: `routes[2]` or `skip[0]`. */
  readonly where: string;
  /** Names the route in metrics and logs, and prefixes its unnamed rules. */
  readonly name: string;
  readonly methods: readonly string[];
  /** A Fastify path pattern: `/v1/users/:id`, `/files/*`. */
  readonly path: string;
  /** Whether letters must match in case too (default: no, `/LOGIN` is `/login`). */
  readonly caseSensitive: boolean;
  readonly cost: number;
  /** Which responses keep their cost; the others give it back once they end. */
  readonly count: RouteCount;
  /** The upstream response header (or trailer) with the actual cost, lowercase; `cost` is reserved until then. */
  readonly settle: { readonly header: string } | undefined;
  readonly skip: boolean;
  /** The criticality of the route's requests under the adaptive limit (a priority header overrides it). */
  readonly priority: Criticality | undefined;
  /** The route's own adaptive limit, in place of the upstream's (`adaptive` on the route). */
  readonly adaptive: AdaptiveLimitOptions | undefined;
  /** Rules per plan for this route (the plan's own rules included unless `inherit: false`). */
  readonly rules: ReadonlyMap<string, readonly RuleOptions[]>;
}

/** A route's fields that limit it (a skipped route takes none of them). */
const LIMIT_FIELDS = [
  'limit',
  'window',
  'algorithm',
  'burst',
  'rules',
  'plans',
  'inherit',
  'cost',
  'count',
  'settle',
  'concurrency',
  'shadow',
];

/** `routes` then `skip`, in order; the gateway adds a catch-all for every path they leave. */
export function parseRoutes(raw: Fields, plans: ReadonlyMap<string, readonly RuleOptions[]>): RouteSpec[] {
  const routes: RouteSpec[] = [];
  const seen = new Map<string, string>();
  const usedNames = new Set<string>();
  const claim = (route: RouteSpec) => {
    for (const method of route.methods) {
      const id = `${method} ${route.caseSensitive ? route.path : route.path.toLowerCase()}`;
      const previous = seen.get(id);
      if (previous !== undefined) fail(route.where, `${id} is also defined by ${previous}`);
      seen.set(id, route.where);
    }
    routes.push(route);
  };

  const list = raw.routes === undefined ? [] : arrayAt(raw.routes, 'routes');
  for (const [index, item] of list.entries()) {
    const where = `routes[${index}]`;
    const fields = objectAt(item, where, [
      'name',
      'method',
      'path',
      'skip',
      'caseSensitive',
      'priority',
      'adaptive',
      ...LIMIT_FIELDS,
    ]);
    const path = parsePath(fields.path, `${where}.path`);
    const methods = parseMethods(fields.method, `${where}.method`);
    const name =
      fields.name === undefined
        ? uniqueName(defaultRouteName(methods, path), usedNames)
        : stringAt(fields.name, `${where}.name`, NAME, NAME_HINT);
    usedNames.add(name);
    const skip = fields.skip === undefined ? false : booleanAt(fields.skip, `${where}.skip`);
    const caseSensitive =
      fields.caseSensitive === undefined ? false : booleanAt(fields.caseSensitive, `${where}.caseSensitive`);
    const cost =
      fields.cost === undefined ? 1 : integerAt(fields.cost, `${where}.cost`, 1, Number.MAX_SAFE_INTEGER);
    const count = fields.count === undefined ? 'all' : oneOf(fields.count, `${where}.count`, COUNTS);
    const settle = fields.settle === undefined ? undefined : parseSettle(fields.settle, `${where}.settle`);
    const ownFields = LIMIT_FIELDS.filter((field) => fields[field] !== undefined);
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
    // A shadow route's own rules are evaluated and counted, never enforced; inherited plan rules
    // are shared with other routes and keep their own setting.
    const shadow = fields.shadow === undefined ? false : booleanAt(fields.shadow, `${where}.shadow`);
    const shadowed = (rules: RuleOptions[]) => {
      if (!shadow) return rules;
      checkShadow(rules, `${where}.shadow`, "the route's own rules");
      return rules.map((rule) => ({ ...rule, shadow: true }));
    };
    let own: RuleOptions[] = [];
    if (fields.limit !== undefined) {
      const rule: Fields = { limit: fields.limit };
      if (fields.window !== undefined) rule.window = fields.window;
      if (fields.algorithm !== undefined) rule.algorithm = fields.algorithm;
      if (fields.burst !== undefined) rule.burst = fields.burst;
      own = shadowed(parseRuleList(rule, where, name));
    } else if (fields.rules !== undefined) {
      own = shadowed(parseRuleList(fields.rules, `${where}.rules`, name));
    }
    if (fields.concurrency !== undefined) {
      own = [...own, ...shadowed([concurrencyRule(fields.concurrency, `${where}.concurrency`, name)])];
    }
    const perPlan = new Map<string, RuleOptions[]>();
    const planFields =
      fields.plans === undefined ? {} : objectAt(fields.plans, `${where}.plans`, [...plans.keys()]);
    for (const [plan, planRules] of plans) {
      const extra =
        planFields[plan] === undefined
          ? []
          : shadowed(parseRuleList(planFields[plan], join(`${where}.plans`, plan), name));
      const combined = [...own, ...extra, ...(inherit ? planRules : [])];
      if (combined.length === 0)
        fail(where, `no rules for plan '${plan}': give limit, rules or plans, or inherit: true`);
      const at = plans.size > 1 ? `${where} (plan ${plan})` : where;
      core(() => resolveRules(combined, at));
      checkLeasing(combined, at);
      perPlan.set(plan, combined);
    }
    claim({
      where,
      name,
      methods,
      path,
      caseSensitive,
      cost,
      count,
      settle,
      skip,
      priority: parsePriority(fields.priority, `${where}.priority`),
      adaptive: parseAdaptive(fields.adaptive, `${where}.adaptive`),
      rules: skip ? new Map() : perPlan,
    });
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
    claim({
      where,
      name,
      methods,
      path,
      caseSensitive: false,
      cost: 1,
      count: 'all',
      settle: undefined,
      skip: true,
      priority: undefined,
      adaptive: undefined,
      rules: new Map(),
    });
  }
  return routes;
}

function parseSettle(value: unknown, path: string): { header: string } {
  const fields = objectAt(value, path, ['header']);
  if (fields.header === undefined)
    fail(`${path}.header`, 'required: the upstream header with the actual cost');
  const header = stringAt(
    fields.header,
    `${path}.header`,
    HEADER_NAME,
    'must be a header name, e.g. x-usage-tokens',
  );
  return { header: header.toLowerCase() };
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
