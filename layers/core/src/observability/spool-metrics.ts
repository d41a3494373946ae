/**
 * The local spools' size as CloudWatch metrics in the embedded metric format (GW_EMF_METRICS=ON),
 * one document per queue every interval: what waits on disk, what could not be spooled, and how
 * many answers ended before their request log was kept. The same figures are in `GET /v1/health`.
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SpoolStats } from '../ports/local/spool.ts';
import type { DurabilityStats } from './logging-hook.ts';
import { METRICS_NAMESPACE } from './metrics-hook.ts';

export const SPOOL_METRIC = {
  bytes: 'SpoolBytes',
  pending: 'SpoolPendingMessages',
  /** Messages refused since the start (the spool full or unwritable). */
  dropped: 'SpoolDroppedMessages',
  /** Answers that ended before their request log was on disk, since the start. */
  lateAnswers: 'AnswersBeforeLogKept',
} as const;

export function publishSpoolMetrics(m: Metrics, spools: Record<string, SpoolStats>, durability?: DurabilityStats): void {
  for (const [queue, s] of Object.entries(spools)) {
    m.addDimensions({ queue });
    m.addMetric(SPOOL_METRIC.bytes, MetricUnit.Bytes, s.bytes);
    m.addMetric(SPOOL_METRIC.pending, MetricUnit.Count, s.pending);
    m.addMetric(SPOOL_METRIC.dropped, MetricUnit.Count, s.dropped);
    m.publishStoredMetrics();
  }
  if (durability) {
    m.addMetric(SPOOL_METRIC.lateAnswers, MetricUnit.Count, durability.late);
    m.publishStoredMetrics();
  }
}

/** Publishes every `intervalMs` (timer unref'd); returns the stop function. */
export function startSpoolMetrics(opts: {
  serviceName: string;
  intervalMs: number;
  spools: () => Record<string, SpoolStats>;
  durability?: () => DurabilityStats;
  metrics?: Metrics;
}): () => void {
  const metrics = opts.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: opts.serviceName });
  const timer = setInterval(() => publishSpoolMetrics(metrics, opts.spools(), opts.durability?.()), opts.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
