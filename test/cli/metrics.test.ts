/** The gateway's Prometheus exposition: format, label escaping, cumulative histogram buckets. */
import { describe, expect, it } from 'vitest';
import { createRegistry, gatewayMetrics } from '../../src/cli/serve/metrics.js';

describe('Prometheus registry', () => {
  it('renders counters, gauges and cumulative histograms in the text format', () => {
    const registry = createRegistry();
    const counter = registry.counter('demo_total', 'A counter.');
    const gauge = registry.gauge('demo_in_flight', 'A gauge.');
    const histogram = registry.histogram('demo_seconds', 'A histogram.', [0.01, 0.1, 1]);
    counter.inc({ outcome: 'allowed' });
    counter.inc({ outcome: 'allowed' }, 2);
    counter.inc({ outcome: 'denied' });
    gauge.add(3);
    gauge.add(-1);
    for (const value of [0.005, 0.05, 0.05, 0.5, 5]) histogram.observe(value, { store: 'redis' });
    expect(registry.render()).toBe(
      [
        '# HELP demo_total A counter.',
        '# TYPE demo_total counter',
        'demo_total{outcome="allowed"} 3',
        'demo_total{outcome="denied"} 1',
        '# HELP demo_in_flight A gauge.',
        '# TYPE demo_in_flight gauge',
        'demo_in_flight 2',
        '# HELP demo_seconds A histogram.',
        '# TYPE demo_seconds histogram',
        'demo_seconds_bucket{store="redis",le="0.01"} 1',
        'demo_seconds_bucket{store="redis",le="0.1"} 3',
        'demo_seconds_bucket{store="redis",le="1"} 4',
        'demo_seconds_bucket{store="redis",le="+Inf"} 5',
        'demo_seconds_sum{store="redis"} 5.605',
        'demo_seconds_count{store="redis"} 5',
        '',
      ].join('\n'),
    );
  });

  it('escapes label values: backslash, double quote, newline', () => {
    const registry = createRegistry();
    registry.counter('odd_total', 'Odd labels.').inc({ rule: 'a\\b"c\nd' });
    expect(registry.render()).toContain('odd_total{rule="a\\\\b\\"c\\nd"} 1\n');
  });

  it('declares every gateway metric, each line well formed', () => {
    const metrics = gatewayMetrics();
    metrics.decisions.inc({ route: 'default', plan: 'default', rule: 'minute', outcome: 'denied' });
    metrics.storeLatency.observe(0.002, { store: 'memory', operation: 'check' });
    const text = metrics.registry.render();
    for (const name of [
      'floodgate_decisions_total',
      'floodgate_degraded_decisions_total',
      'floodgate_store_latency_seconds',
      'floodgate_store_errors_total',
      'floodgate_http_requests_total',
      'floodgate_upstream_errors_total',
      'floodgate_in_flight_requests',
      'floodgate_config_reloads_total',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    for (const line of text.trimEnd().split('\n')) {
      expect(line).toMatch(
        /^(# (HELP|TYPE) [a-z_]+ .+|[a-z_]+(\{([a-z_]+="[^"]*",?)+\})? (\d+(\.\d+)?|\+Inf))$/,
      );
    }
  });
});
