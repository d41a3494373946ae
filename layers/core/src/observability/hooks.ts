/**
 * The observability gateway hooks, registered by createDeps after pricing and limits: `logging`
 * (unless GW_REQUEST_LOGS=OFF) and `metrics` (GW_EMF_METRICS=ON; set in Lambda) and
 * `otel` (when OTEL_EXPORTER_OTLP_ENDPOINT is set). Only what the
 * gateway needs is imported here: the workers and the analytics live in install.ts.
 */
import type { AppConfig } from '../config.ts';
import type { GatewayHook } from '../gateway/lifecycle.ts';
import type { BlobStore } from '../ports/blob.ts';
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { QueueFactory } from '../ports/queue-factory.ts';
import type { Pricer } from '../gateway/usage.ts';
import { loggingHook } from './logging-hook.ts';
import { LOGS_QUEUE, type LogQueueMessage } from './messages.ts';
import { metricsHook } from './metrics-hook.ts';
import { otelHook } from './otel-hook.ts';

export interface ObservabilityDeps {
  config: Pick<AppConfig, 'requestLogs' | 'emfMetrics' | 'otel'>;
  queues: QueueFactory;
  blobs: BlobStore;
  clock: Clock;
  logger: Logger;
  pricing: Pricer;
}

/** The hooks that log and measure every gateway request, in their order. */
export function observabilityHooks(deps: ObservabilityDeps): GatewayHook[] {
  const hooks: GatewayHook[] = [];
  if (deps.config.requestLogs) {
    hooks.push(
      loggingHook({
        // Looked up on first use: a function that never logs needs no queue URL.
        queue: () => deps.queues.get<LogQueueMessage>(LOGS_QUEUE),
        blobs: deps.blobs,
        clock: deps.clock,
        logger: deps.logger,
        uncachedCostMicros: (r) => deps.pricing.costMicros({ ...r, cacheStatus: undefined }),
      }),
    );
  }
  if (deps.config.emfMetrics) hooks.push(metricsHook({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'gantry', now: () => deps.clock.now() }));
  if (deps.config.otel) hooks.push(otelHook({ config: deps.config.otel, logger: deps.logger, now: () => deps.clock.now() }));
  return hooks;
}
