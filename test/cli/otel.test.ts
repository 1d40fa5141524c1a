/**
 * `floodgate serve` with OpenTelemetry configured by the standard environment: a real gateway
 * process exports its limiters' metrics through @opentelemetry/sdk-node's OTLP exporter (HTTP,
 * JSON) to a receiver this test runs, and the decisions counted there are the requests made.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { otelRequested } from '../../src/cli/serve/otel.js';
import { type RunningCli, startCli } from './support/cli.js';
import { freePort } from './support/ports.js';

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string };
}
interface OtlpMetric {
  name: string;
  unit?: string;
  sum?: { dataPoints: { attributes: OtlpAttribute[]; asInt?: number | string; asDouble?: number }[] };
}
interface OtlpExport {
  resourceMetrics: { scopeMetrics: { scope: { name: string }; metrics: OtlpMetric[] }[] }[];
}

let receiver: Server;
const exports: OtlpExport[] = [];
let gateway: RunningCli;
let url: string;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/metrics') exports.push(JSON.parse(body) as OtlpExport);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const address = receiver.address();
  if (address === null || typeof address === 'string') throw new Error('no receiver port');
  gateway = startCli(
    [
      'serve',
      '--port',
      '0',
      '--admin-port',
      String(await freePort()),
      '--limit',
      '3/1m',
      '--trust-proxy',
      'loopback',
    ],
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${address.port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_METRIC_EXPORT_INTERVAL: '300',
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
    },
  );
  url = (await gateway.waitForLog((line) => line.event === 'listening', 45_000)).url as string;
}, 60_000);

afterAll(async () => {
  gateway?.kill();
  receiver?.close();
});

/** The latest exported value of `floodgate.decisions` per outcome (counters are cumulative). */
function decisionsByOutcome(): Record<string, number> {
  const found: Record<string, number> = {};
  for (const exported of exports) {
    for (const resource of exported.resourceMetrics) {
      for (const scope of resource.scopeMetrics) {
        for (const metric of scope.metrics) {
          if (metric.name !== 'floodgate.decisions') continue;
          for (const point of metric.sum?.dataPoints ?? []) {
            const outcome = point.attributes.find((a) => a.key === 'floodgate.outcome')?.value.stringValue;
            if (outcome !== undefined) found[outcome] = Number(point.asInt ?? point.asDouble ?? 0);
          }
        }
      }
    }
  }
  return found;
}

describe('serve with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it("exports the limiters' decisions to the OTLP receiver, counted once each", async () => {
    expect(gateway.logs.some((line) => line.event === 'otel_started')).toBe(true);
    for (let i = 0; i < 5; i++) {
      const response = await fetch(url, { headers: { 'x-forwarded-for': '192.0.2.77' } });
      await response.arrayBuffer();
    }
    await expect
      .poll(decisionsByOutcome, { timeout: 15_000, interval: 200 })
      .toEqual({ allowed: 3, denied: 2 });
    const names = new Set(
      exports.flatMap((e) =>
        e.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.name))),
      ),
    );
    // Only instruments with data points are exported: the memory store times no call, no slice was taken.
    expect([...names].filter((name) => name.startsWith('floodgate.'))).toEqual(['floodgate.decisions']);
  }, 30_000);
});

describe('otelRequested', () => {
  it('follows the standard variables: an endpoint or an exporter, unless disabled or none', () => {
    expect(otelRequested({})).toBe(false);
    expect(otelRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(otelRequested({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://collector:4318/v1/metrics' })).toBe(
      true,
    );
    expect(otelRequested({ OTEL_METRICS_EXPORTER: 'console' })).toBe(true);
    expect(
      otelRequested({ OTEL_METRICS_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }),
    ).toBe(false);
    expect(otelRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe(
      false,
    );
  });
});
