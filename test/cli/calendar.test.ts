/**
 * The gateway and calendar rules: its config takes period, timeZone, anchor and thresholds in
 * plans (refusals name the field), a threshold crossed by its checks is logged as event
 * `threshold` and counted in floodgate_thresholds_total{rule,threshold}, and `floodgate inspect`
 * shows a calendar rule's period in its time zone; `compare --calendar` shows one across a DST
 * change and a month end.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { calendarDemoText, runCalendarDemo } from '../../src/cli/compare/calendar-demo.js';
import { parseGatewayConfig } from '../../src/cli/config/schema.js';
import { createLimiterCache } from '../../src/cli/serve/limiters.js';
import { createLogger } from '../../src/cli/serve/log.js';
import { gatewayMetrics } from '../../src/cli/serve/metrics.js';
import { openStore } from '../../src/cli/serve/store.js';
import { memoryStore } from '../../src/index.js';
import { startRedisServer } from '../support/redis-server.js';
import { runCli } from './support/cli.js';

const PLANS = {
  plans: {
    pro: {
      rules: [
        {
          limit: 4,
          period: 'month',
          timeZone: 'Europe/Berlin',
          anchor: '2026-01-15T09:00',
          thresholds: [0.5, 1],
        },
      ],
    },
  },
  tiers: { header: 'x-plan', trust: 'header', default: 'pro' },
};

describe('calendar rules in the gateway', () => {
  it('reads them in plans, fixed-window by default, and names a bad field', () => {
    const config = parseGatewayConfig(PLANS);
    expect(config.plans.get('pro')).toEqual([
      {
        algorithm: 'fixed-window',
        limit: 4,
        period: 'month',
        timeZone: 'Europe/Berlin',
        anchor: '2026-01-15T09:00',
        thresholds: [0.5, 1],
      },
    ]);
    expect(() =>
      parseGatewayConfig({ rules: [{ limit: 4, period: 'month', timeZone: 'Europe/Nowhere' }] }),
    ).toThrow('rules[0].timeZone: "Europe/Nowhere" is not an IANA time zone');
    expect(() => parseGatewayConfig({ rules: [{ limit: '4/1m', period: 'day' }] })).toThrow(
      'rules[0].limit: "4/1m" must be a number of units per period',
    );
  });

  it('logs the quota-durability warning once, on a Redis that persists nothing, and lists it for /healthz', async () => {
    const redis = await startRedisServer();
    const output = new PassThrough();
    let logged = '';
    output.on('data', (chunk) => {
      logged += chunk;
    });
    const logger = createLogger(output);
    const metrics = gatewayMetrics();
    const store = await openStore({ url: redis.url }, logger, metrics);
    try {
      const config = parseGatewayConfig(PLANS);
      const limiters = createLimiterCache({ config, metrics, logger, store });
      // Two limiters with calendar rules on the one store: one warning.
      limiters.get(config.plans);
      limiters.forRules([{ algorithm: 'fixed-window', limit: 9, period: 'day' }]);
      await expect.poll(() => store.warnings().length, { timeout: 5_000, interval: 20 }).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const warnings = logged
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((line) => line.event === 'store_warning');
      expect(warnings.map((line) => line.code)).toEqual(['quota-durability']);
      expect(store.warnings()[0]).toContain('Redis persists nothing');
    } finally {
      await store.close();
      await redis.stop();
    }
  });

  it('logs each threshold crossed as event threshold and counts it by rule and threshold', async () => {
    const config = parseGatewayConfig(PLANS);
    const output = new PassThrough();
    let logged = '';
    output.on('data', (chunk) => {
      logged += chunk;
    });
    const metrics = gatewayMetrics();
    const store = memoryStore();
    const limiters = createLimiterCache({
      config,
      metrics,
      logger: createLogger(output),
      store: {
        store,
        target: undefined,
        label: 'memory',
        warnings: () => [],
        report: () => undefined,
        ping: async () => {},
        close: async () => {},
      },
    });
    const limiter = limiters.get(config.plans);
    for (let i = 0; i < 5; i++) await limiter.check('tenant', { plan: 'pro' });
    const events = logged
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => line.event === 'threshold');
    expect(events.map(({ rule, threshold, used, limit }) => ({ rule, threshold, used, limit }))).toEqual([
      { rule: 'pro.fixed-window-4-per-month', threshold: 0.5, used: 2, limit: 4 },
      { rule: 'pro.fixed-window-4-per-month', threshold: 1, used: 4, limit: 4 },
    ]);
    const text = metrics.registry.render();
    expect(text).toContain(
      'floodgate_thresholds_total{rule="pro.fixed-window-4-per-month",threshold="0.5"} 1',
    );
    expect(text).toContain('floodgate_thresholds_total{rule="pro.fixed-window-4-per-month",threshold="1"} 1');
  });
});

describe('floodgate inspect on a calendar rule', { timeout: 60_000 }, () => {
  it("shows the period, its start and end in the rule's time zone", async () => {
    const [redis, dir] = await Promise.all([
      startRedisServer(),
      mkdtemp(join(tmpdir(), 'floodgate-calendar-')),
    ]);
    try {
      const config = join(dir, 'gateway.yaml');
      await writeFile(
        config,
        'rules: [{ name: monthly, limit: 100, period: month, timeZone: Asia/Kolkata, anchor: "2026-01-31T09:30" }]\n',
      );
      const before = Date.now();
      const json = await runCli(['inspect', 'k', '--config', config, '--redis', redis.url, '--json']);
      expect(json.stderr).toBe('');
      const [row] = JSON.parse(json.stdout).rules;
      expect(row.period).toMatchObject({ period: 'month', timeZone: 'Asia/Kolkata' });
      expect(row.period.start).toMatch(/^\d{4}-\d{2}-\d{2} 09:30:00\+05:30$/);
      expect(row.period.end).toMatch(/^\d{4}-\d{2}-\d{2} 09:30:00\+05:30$/);
      expect(row.period.startMs).toBeLessThanOrEqual(before);
      expect(row.period.endMs).toBeGreaterThan(before);
      const text = await runCli(['inspect', 'k', '--config', config, '--redis', redis.url]);
      expect(text.stdout).toContain(
        `Period of monthly: month in Asia/Kolkata, ${row.period.start} to ${row.period.end}`,
      );
      expect(text.stdout).toContain('100/month Asia/Kolkata from 2026-01-31T09:30');
    } finally {
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('floodgate compare --calendar', () => {
  it('shows the calendar day end at local midnight after 23 hours, and February end on the 28th', async () => {
    const rows = await runCalendarDemo();
    const of = (rule: string) =>
      rows
        .filter((row) => row.rule === rule)
        .map(({ at, allowed, remaining, resetsAt }) => [at, allowed, remaining, resetsAt]);
    expect(of('calendar-day')).toEqual([
      ['2026-03-07 23:30:00-05:00', true, 1, '2026-03-08 00:00:00-05:00'],
      ['2026-03-08 00:30:00-05:00', true, 1, '2026-03-09 00:00:00-04:00'],
      ['2026-03-08 20:30:00-04:00', true, 0, '2026-03-09 00:00:00-04:00'],
      ['2026-03-09 00:30:00-04:00', true, 1, '2026-03-10 00:00:00-04:00'],
    ]);
    expect(of('calendar-month').map((row) => row[3])).toEqual([
      '2026-02-28 00:00:00+00:00',
      '2026-02-28 00:00:00+00:00',
      '2026-03-31 00:00:00+00:00',
      '2026-03-31 00:00:00+00:00',
    ]);
    // The 30-day window, aligned to the epoch, denies on Feb 28 where the billing month has begun.
    expect(of('window-30d')[2]).toEqual(['2026-02-28 00:00:00+00:00', false, 0, '2026-03-08 00:00:00+00:00']);
    expect(calendarDemoText(rows)).toContain('a month anchored on the 31st over February');
  });
});
