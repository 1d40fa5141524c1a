/**
 * Where the gateway's adaptive limit reads a request's criticality from: the priority header,
 * else the route's `priority`, else the plan's (`priority` on a plan, the plan its tier header
 * picks), else standard. In-process: the config as parsed, and the plan lookup the hook uses.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { parseGatewayConfig } from '../../src/cli/config/schema.js';
import { planCriticalityOf } from '../../src/cli/serve/adaptive.js';
import { describeConfig } from '../../src/cli/serve/describe.js';

const TIERED = {
  adaptive: true,
  plans: {
    gold: { rules: [{ limit: '100/1m' }], priority: 'critical' },
    free: { rules: [{ limit: '10/1m' }], priority: 'sheddable' },
    basic: [{ limit: '30/1m' }],
  },
  tiers: { header: 'x-plan', trust: 'header', default: 'basic' },
};

const request = (plan?: string) =>
  ({ headers: plan === undefined ? {} : { 'x-plan': plan } }) as unknown as IncomingMessage;

describe("a plan's priority", () => {
  it('is the criticality of the requests its tier header picks; a plan without one leaves it to the default', () => {
    const config = parseGatewayConfig(TIERED);
    expect([...config.planPriorities]).toEqual([
      ['gold', 'critical'],
      ['free', 'sheddable'],
    ]);
    const criticality = planCriticalityOf(config);
    expect(criticality(request('gold'))).toBe('critical');
    expect(criticality(request('free'))).toBe('sheddable');
    expect(criticality(request('basic'))).toBeUndefined();
    // An unknown or missing plan is the default plan's, which has none.
    expect(criticality(request('platinum'))).toBeUndefined();
    expect(criticality(request())).toBeUndefined();
    expect(describeConfig(config)).toContain('plan gold (critical): ');
    expect(describeConfig(config)).toContain("criticality from the route, else the plan's, else standard");
  });

  it('is refused when it is not a criticality, or when no adaptive limit is on, naming the field', () => {
    const bad = {
      ...TIERED,
      plans: { ...TIERED.plans, gold: { rules: [{ limit: '1/1m' }], priority: 'urgent' } },
    };
    expect(() => parseGatewayConfig(bad)).toThrow(
      "plans.gold.priority: \"urgent\" is not one of 'critical', 'standard', 'sheddable'",
    );
    const { adaptive: _off, ...withoutLimit } = TIERED;
    expect(() => parseGatewayConfig(withoutLimit)).toThrow(
      'plans.gold.priority: a criticality only matters with the adaptive limit',
    );
    // A route's own limit is an adaptive limit too.
    expect(() =>
      parseGatewayConfig({ ...withoutLimit, routes: [{ path: '/r', adaptive: true }] }),
    ).not.toThrow();
  });
});
