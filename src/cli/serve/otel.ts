/**
 * OpenTelemetry for `serve`, configured by the standard environment: when it names an exporter
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` or `OTEL_METRICS_EXPORTER`),
 * the gateway starts `@opentelemetry/sdk-node` (an optional peer dependency, loaded only then),
 * which reads every other `OTEL_*` variable itself, and its limiters record through the meter
 * (docs/observability.md). Without the package the gateway runs on and says what to install.
 */
import type { LimiterOptions } from '../../index.js';
import type { Logger } from './log.js';

export interface GatewayOtel {
  readonly meter: NonNullable<LimiterOptions['meter']>;
  /** Exports what is pending and stops the SDK. */
  shutdown(): Promise<void>;
}

/** Whether the environment asks for OpenTelemetry metrics. */
export function otelRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_METRICS_EXPORTER ?? '').split(',').map((name) => name.trim());
  if (exporters.includes('none')) return false;
  return Boolean(
    env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT || env.OTEL_METRICS_EXPORTER,
  );
}

/** Starts the SDK when the environment asks for it; undefined when it does not or cannot. */
export async function startOtel(env: NodeJS.ProcessEnv, logger: Logger): Promise<GatewayOtel | undefined> {
  if (!otelRequested(env)) return undefined;
  let sdkNode: typeof import('@opentelemetry/sdk-node');
  let api: typeof import('@opentelemetry/api');
  try {
    [sdkNode, api] = await Promise.all([import('@opentelemetry/sdk-node'), import('@opentelemetry/api')]);
  } catch {
    logger.warn('otel_unavailable', {
      detail:
        "the OTEL_* environment asks for OpenTelemetry metrics, which need the packages '@opentelemetry/sdk-node' and '@opentelemetry/api': npm install @opentelemetry/sdk-node @opentelemetry/api (Prometheus /metrics is unaffected)",
    });
    return undefined;
  }
  const sdk = new sdkNode.NodeSDK({ serviceName: env.OTEL_SERVICE_NAME || 'floodgate' });
  sdk.start();
  logger.info('otel_started', { detail: 'the limiters record through an OpenTelemetry meter too' });
  return {
    meter: api.metrics.getMeter('floodgate'),
    shutdown: () => sdk.shutdown(),
  };
}
