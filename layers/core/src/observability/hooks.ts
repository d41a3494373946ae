/**
 * The observability gateway hooks, registered by createDeps after pricing and limits: `logging`
 * (unless GW_REQUEST_LOGS=OFF) and `metrics` (GW_EMF_METRICS=ON; set in Lambda) and
 * `otel` (when OTEL_EXPORTER_OTLP_ENDPOINT is set). Only what the
 * gateway needs is imported here: the workers and the analytics live in install.ts.
 */
import type { AppConfig } from '../config.ts';
import type { GatewayHook } from '../kernel/lifecycle.ts';
import type { BlobStore } from '../ports/blob.ts';
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { QueueFactory } from '../ports/queue-factory.ts';
import type { Pricer } from '../kernel/usage.ts';
import { loggingHook, type LoggingHook } from './logging-hook.ts';
import { LOGS_QUEUE, type LogQueueMessage } from './messages.ts';
import { metricsHook } from './metrics-hook.ts';
import { otelHook } from './otel-hook.ts';

export interface ObservabilityDeps {
  config: Pick<AppConfig, 'requestLogs' | 'emfMetrics' | 'otel' | 'spool' | 'storage'>;
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
        // A local spool keeps events on disk, SQS keeps them for a server on AWS (GW_STORAGE=aws):
        // answers can wait until theirs is, so a replica that dies loses no answered request's log.
        durableAnswers: deps.config.spool !== undefined || deps.config.storage === 'aws',
      }),
    );
  }
  if (deps.config.emfMetrics) hooks.push(metricsHook({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'gantry', now: () => deps.clock.now() }));
  if (deps.config.otel) hooks.push(otelHook({ config: deps.config.otel, logger: deps.logger, now: () => deps.clock.now() }));
  return hooks;
}

/**
 * Where the logging hook tracks when each request's event is kept (the local server with a spool):
 * the runtime holds the end of an answer until `durable(x-gw-log-id)` resolves. Undefined when there
 * is nothing to wait for (no request logs, no spool, AWS where the function flushes to SQS).
 */
export function logDurability(hooks: readonly GatewayHook[]): Required<Pick<LoggingHook, 'durable' | 'durabilityStats'>> | undefined {
  const hook = hooks.find((h): h is LoggingHook => h.name === 'logging');
  return hook?.durable && hook.durabilityStats ? { durable: hook.durable, durabilityStats: hook.durabilityStats } : undefined;
}
