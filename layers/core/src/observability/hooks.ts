/**
 * The observability gateway hooks, registered by createDeps after pricing and limits: `logging`
 * (unless GW_REQUEST_LOGS=OFF) and `metrics` (GW_EMF_METRICS=ON; set in Lambda). Only what the
 * gateway needs is imported here: the workers and the analytics live in install.ts.
 */
import type { CoreDeps } from '../deps.ts';
import { loggingHook } from './logging-hook.ts';
import { LOGS_QUEUE, type LogQueueMessage } from './messages.ts';
import { metricsHook } from './metrics-hook.ts';

export function installObservability(deps: CoreDeps): void {
  if (deps.config.requestLogs) {
    deps.gatewayHooks.push(
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
  if (deps.config.emfMetrics) deps.gatewayHooks.push(metricsHook({ serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'gantry', now: () => deps.clock.now() }));
}
