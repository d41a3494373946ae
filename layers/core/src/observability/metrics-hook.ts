/**
 * The `metrics` gateway hook: CloudWatch metrics in the embedded metric format (Powertools Metrics:
 * EMF lines on stdout, turned into metrics by CloudWatch Logs off the request's path; billed as log
 * ingestion, about 1.4 KB a request, which the README's cost table counts). Namespace `Gantry`; each metric is emitted per service, per provider, per provider and
 * model, and per status class (2xx, 4xx, 5xx).
 */
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { GatewayHook, GatewayRecord } from '../kernel/lifecycle.ts';
import { findModel } from '../pricing/catalog.ts';
import { findProvider } from '../providers/registry.ts';
import { isCacheHit } from './log-event.ts';

export const METRICS_NAMESPACE = 'Gantry';

/** Metric names, shared with the dashboard and alarms (infra/stacks/monitoring-stack.ts). */
export const METRIC = {
  requests: 'Requests',
  errors: 'Errors',
  latency: 'Latency',
  timeToFirstToken: 'TimeToFirstToken',
  inputTokens: 'InputTokens',
  outputTokens: 'OutputTokens',
  totalTokens: 'TotalTokens',
  cost: 'CostUSD',
  cacheHits: 'CacheHits',
  limitRefusals: 'LimitRefusals',
} as const;

const LIMIT_CODES = new Set(['rate_limit_exceeded', 'budget_exhausted', 'usage_limit_exceeded']);

/**
 * Dimension values are bounded: CloudWatch bills every distinct combination as a metric, and the
 * caller chooses the model name. A provider Gantry does not know, or a model not in the catalog,
 * is reported as `other`.
 */
export const OTHER = 'other';
const providerDimension = (provider: string | undefined): string => (!provider ? 'none' : findProvider(provider) ? provider.toLowerCase() : OTHER);
const modelDimension = (provider: string | undefined, model: string | undefined): string => {
  if (!model) return 'none';
  return provider && findModel(provider.toLowerCase(), model) ? model.slice(0, 100) : OTHER;
};

export const statusClass = (status: number | undefined): string => (status && status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'unknown');

export function isLimitRefusal(r: Pick<GatewayRecord, 'status' | 'errorCode'>): boolean {
  return (r.status === 429 || r.status === 402) && r.errorCode !== undefined && LIMIT_CODES.has(r.errorCode);
}

/** Adds one request's figures to `m`, for the dimension sets already added. */
function addFigures(m: Metrics, r: GatewayRecord, now: number): void {
  m.addMetric(METRIC.requests, MetricUnit.Count, 1);
  m.addMetric(METRIC.errors, MetricUnit.Count, (r.status ?? 500) >= 400 ? 1 : 0);
  m.addMetric(METRIC.latency, MetricUnit.Milliseconds, Math.max(0, (r.endedAt ?? r.upstreamHeadersAt ?? now) - r.startedAt));
  if (r.stream && r.firstByteAt !== undefined) m.addMetric(METRIC.timeToFirstToken, MetricUnit.Milliseconds, Math.max(0, r.firstByteAt - r.startedAt));
  if (r.usage) {
    m.addMetric(METRIC.inputTokens, MetricUnit.Count, r.usage.prompt_tokens);
    m.addMetric(METRIC.outputTokens, MetricUnit.Count, r.usage.completion_tokens);
    m.addMetric(METRIC.totalTokens, MetricUnit.Count, r.usage.total_tokens);
  }
  if (r.costMicros !== undefined) m.addMetric(METRIC.cost, MetricUnit.NoUnit, r.costMicros / 1e6);
  m.addMetric(METRIC.cacheHits, MetricUnit.Count, isCacheHit(r.cacheStatus) ? 1 : 0);
  m.addMetric(METRIC.limitRefusals, MetricUnit.Count, isLimitRefusal(r) ? 1 : 0);
}

/**
 * Publishes one request's metrics as two EMF documents: per service, per provider and per status
 * class in the first, per provider and model in the second (one document cannot name `provider`
 * in two dimension sets).
 */
export function publishMetrics(m: Metrics, r: GatewayRecord, now: number): void {
  const provider = providerDimension(r.provider);
  m.addDimensions({});
  m.addDimensions({ provider });
  m.addDimensions({ statusClass: statusClass(r.status) });
  addFigures(m, r, now);
  m.publishStoredMetrics();
  m.addDimensions({ provider, model: provider === OTHER ? OTHER : modelDimension(r.provider, r.model) });
  addFigures(m, r, now);
  m.publishStoredMetrics();
}

export function metricsHook(opts: { serviceName: string; now: () => number; metrics?: Metrics }): GatewayHook {
  const metrics = opts.metrics ?? new Metrics({ namespace: METRICS_NAMESPACE, serviceName: opts.serviceName });
  return {
    name: 'metrics',
    complete(record) {
      publishMetrics(metrics, record, opts.now());
    },
  };
}
