/** The local spools' size as EMF metrics: one document per queue, and the answers that ended before their log was kept. */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import { publishSpoolMetrics, SPOOL_METRIC } from '../../../../layers/core/src/observability/spool-metrics.ts';
import type { SpoolStats } from '../../../../layers/core/src/ports/local/spool.ts';

const stats = (patch: Partial<SpoolStats>): SpoolStats => ({
  bytes: 0,
  maxBytes: 1 << 20,
  dropped: 0,
  pending: 0,
  full: false,
  syncs: 0,
  syncErrors: 0,
  ...patch,
});

describe('spool metrics', () => {
  it('publish bytes, pending and dropped messages per queue, and the late answers', () => {
    const lines: string[] = [];
    const m = new Metrics({ namespace: 'Gantry', serviceName: 'gantry-local' });
    (m as unknown as { console: { log: (s: string) => void } }).console = { log: (s: string) => lines.push(s) } as never;
    publishSpoolMetrics(m, { logs: stats({ bytes: 4096, pending: 3, dropped: 2 }), 'log-exports': stats({}) }, { kept: 10, late: 1 });
    const docs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(docs).toHaveLength(3);
    expect(docs[0]).toMatchObject({ queue: 'logs', [SPOOL_METRIC.bytes]: 4096, [SPOOL_METRIC.pending]: 3, [SPOOL_METRIC.dropped]: 2 });
    expect(docs[1]).toMatchObject({ queue: 'log-exports', [SPOOL_METRIC.bytes]: 0 });
    expect(docs[2]).toMatchObject({ [SPOOL_METRIC.lateAnswers]: 1 });
    expect(docs[2]).not.toHaveProperty('queue');
  });
});
