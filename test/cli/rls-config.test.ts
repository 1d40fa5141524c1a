/**
 * envoyproxy/ratelimit's YAML as Floodgate reads it, and the matching of descriptors to limits.
 * In-process: every bad config gets its own assertion naming the file and the field.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadRlsConfig, parseRlsFile } from '../../src/cli/config/rls.js';
import { parseGatewayConfig } from '../../src/cli/config/schema.js';
import { applyReplaces, limitOf } from '../../src/cli/serve/envoy/match.js';

function error(yaml: string): string {
  try {
    parseRlsFile(parse(yaml), 'f.yaml');
  } catch (caught) {
    return (caught as Error).message;
  }
  throw new Error('expected the file to be rejected');
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'floodgate-rls-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('envoyproxy/ratelimit config', () => {
  it('refuses what the reference service refuses, naming the file and the field', () => {
    expect(error('descriptors: []')).toBe('f.yaml: domain: expected a non-empty string, got undefined');
    expect(error('domain: d\nsettings: 1')).toBe(
      'f.yaml: settings: unknown field; expected one of domain, descriptors, all_or_nothing',
    );
    expect(error('domain: d\ndescriptors:\n  - value: v')).toBe(
      'f.yaml: descriptors[0].key: expected a non-empty string, got undefined',
    );
    expect(error('domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v')).toBe(
      "f.yaml: descriptors[1]: duplicate descriptor 'd.k_v'",
    );
    expect(
      error('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, unit: second }'),
    ).toBe('f.yaml: descriptors[0].rate_limit.unit: an unlimited limit takes no unit');
    expect(error('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second }')).toBe(
      'f.yaml: descriptors[0].rate_limit.requests_per_unit: undefined must be an integer from 0 to 4294967295',
    );
    expect(
      error(
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1, name: a, replaces: [{ name: a }] }',
      ),
    ).toBe('f.yaml: descriptors[0].rate_limit.replaces[0]: a limit cannot replace itself');
    expect(
      error(
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, algorithm: leaky }',
      ),
    ).toBe(
      `f.yaml: descriptors[0].rate_limit.algorithm: "leaky" is not one of 'fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra'`,
    );
    expect(
      error(
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 5, burst: 10 }',
      ),
    ).toBe(
      "f.yaml: descriptors[0].rate_limit.burst: 10 is not allowed: 'fixed-window' has no burst; only 'token-bucket' and 'gcra' take one",
    );
  });

  it("reads every unit as envoyproxy/ratelimit's UnitToDivider does, week included; an unknown unit is refused with the allowed ones", () => {
    const windowOf = (unit: string) =>
      parseRlsFile(
        parse(`domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: ${unit}, requests_per_unit: 1 }`),
        'f.yaml',
      ).tree.children.get('k')?.limit?.rule;
    const day = 86_400_000;
    const units = {
      second: 1000,
      minute: 60_000,
      hour: 3_600_000,
      day,
      Week: 7 * day,
      MONTH: 30 * day,
      year: 365 * day,
    };
    for (const [unit, window] of Object.entries(units)) {
      expect(windowOf(unit)).toEqual({
        name: unit.toLowerCase(),
        algorithm: 'fixed-window',
        limit: 1,
        window,
      });
    }
    expect(
      error('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }'),
    ).toBe(
      "f.yaml: descriptors[0].rate_limit.unit: \"fortnight\" is not one of 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'",
    );
  });

  it('reads a directory of .yaml/.yml files, one domain each; a domain twice is refused', async () => {
    await writeFile(
      join(dir, 'a.yaml'),
      'domain: a\ndescriptors:\n  - key: k\n    rate_limit: { unit: minute, requests_per_unit: 3 }\n',
    );
    await writeFile(join(dir, 'b.yml'), 'domain: b\n');
    await writeFile(join(dir, 'notes.txt'), 'not a config');
    expect([...(await loadRlsConfig(dir, '--grpc-config')).keys()]).toEqual(['a', 'b']);
    await writeFile(join(dir, 'c.yaml'), 'domain: a\n');
    await expect(loadRlsConfig(dir, '--grpc-config')).rejects.toThrow(
      `${join(dir, 'c.yaml')}: domain 'a' is already defined by another file`,
    );
    await expect(loadRlsConfig(join(dir, 'missing.yaml'), '--grpc-config')).rejects.toThrow(
      `--grpc-config: cannot read ${join(dir, 'missing.yaml')}: no such file`,
    );
  });

  it('reads quota_lease (a Floodgate extension) as a gateway rule reads quotaLease, refused where the core refuses it, naming the field', () => {
    const limit = (extra: string) =>
      `domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 100${extra} }`;
    const rule = (extra: string) =>
      parseRlsFile(parse(limit(extra)), 'f.yaml').tree.children.get('k')?.limit?.rule;
    expect(rule(', quota_lease: { max: 20 }')).toEqual({
      name: 'second',
      algorithm: 'fixed-window',
      limit: 100,
      window: 1000,
      quotaLease: { max: 20 },
    });
    expect(rule(', algorithm: gcra, quota_lease: true')).toMatchObject({
      algorithm: 'gcra',
      quotaLease: true,
    });
    expect(error(limit(', quota_lease: { max: 0 }'))).toBe(
      'f.yaml: descriptors[0].rate_limit.quota_lease.max: 0 must be an integer from 1 to 100',
    );
    expect(error(limit(', quota_lease: { size: 5 }'))).toBe(
      'f.yaml: descriptors[0].rate_limit.quota_lease.size: unknown option; quota_lease takes max',
    );
    expect(error(limit(', quota_lease: yes'))).toBe(
      'f.yaml: descriptors[0].rate_limit.quota_lease: expected true or { max }, got "yes"',
    );
    expect(error(limit(', algorithm: sliding-log, quota_lease: true'))).toBe(
      "f.yaml: descriptors[0].rate_limit.quota_lease: not allowed for 'sliding-log': only 'fixed-window', 'sliding-window', 'token-bucket' and 'gcra' rules can lease quota",
    );
    expect(
      error(
        'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 0, quota_lease: true }',
      ),
    ).toBe('f.yaml: descriptors[0].rate_limit.quota_lease: a limit of 0 has no quota to lease');
    expect(
      error('domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unlimited: true, quota_lease: true }'),
    ).toBe('f.yaml: descriptors[0].rate_limit.quota_lease: an unlimited limit has no quota to lease');
  });

  it('grpc needs its config; the port defaults to 8081', () => {
    expect(() => parseGatewayConfig({ grpc: { port: 9000 } })).toThrow(
      /^grpc.config: the Envoy rate limit service needs its limits/,
    );
    expect(parseGatewayConfig({ grpc: { config: 'rls.yaml' } }).grpc).toEqual({
      port: 8081,
      config: 'rls.yaml',
      headers: [],
    });
    expect(() => parseGatewayConfig({ grpc: { config: 'x', port: 70_000 } })).toThrow(
      'grpc.port: 70000 must be an integer from 0 to 65535',
    );
  });

  it('matches as the reference service: key_value, then a key_value* prefix, then the key; only a whole descriptor', () => {
    const { tree } = parseRlsFile(
      parse(`
domain: d
descriptors:
  - key: path
    value: /api*
    rate_limit: { unit: second, requests_per_unit: 1 }
  - key: path
    value: /api/special
    rate_limit: { unit: second, requests_per_unit: 2 }
  - key: path
    rate_limit: { unit: second, requests_per_unit: 3 }
    descriptors:
      - key: user
        rate_limit: { unit: second, requests_per_unit: 4, name: per-user }
  - key: vip
    rate_limit: { unit: second, requests_per_unit: 5, replaces: [{ name: per-user }] }
`),
      'f.yaml',
    );
    const limit = (...pairs: [string, string][]) =>
      limitOf(
        tree,
        pairs.map(([key, value]) => ({ key, value })),
      )?.requestsPerUnit;
    expect(limit(['path', '/api/special'])).toBe(2);
    expect(limit(['path', '/api/other'])).toBe(1);
    expect(limit(['path', '/web'])).toBe(3);
    expect(limit(['path', '/web'], ['user', 'u'])).toBe(4);
    expect(limit(['path', '/web'], ['user', 'u'], ['extra', 'x'])).toBeUndefined();
    expect(limit(['user', 'u'])).toBeUndefined();
    const perUser = limitOf(tree, [
      { key: 'path', value: '/web' },
      { key: 'user', value: 'u' },
    ]);
    const vip = limitOf(tree, [{ key: 'vip', value: 'v' }]);
    expect(applyReplaces([perUser, vip])).toEqual([undefined, vip]);
    expect(applyReplaces([perUser])).toEqual([perUser]);
  });
});
