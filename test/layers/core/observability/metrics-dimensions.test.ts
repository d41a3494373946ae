/**
 * Metric dimensions stay bounded (issue 14): CloudWatch bills every distinct dimension combination
 * as a custom metric, and the caller writes the model name, so a model outside the catalog (or a
 * provider Gantry does not know) is published as `other`.
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import type { GatewayRecord } from '../../../../layers/core/src/kernel/lifecycle.ts';
import { publishMetrics } from '../../../../layers/core/src/observability/metrics-hook.ts';

const T = Date.UTC(2026, 0, 5, 10, 0, 0);

function published(patch: Partial<GatewayRecord>): Record<string, unknown>[] {
  const lines: string[] = [];
  const m = new Metrics({ namespace: 'Gantry', serviceName: 'gantry-gateway' });
  (m as unknown as { console: { log: (s: string) => void } }).console = { log: (s: string) => lines.push(s) } as never;
  const record = { id: 'log-1', startedAt: T, endedAt: T + 100, status: 200, method: 'POST', path: '/v1/chat/completions', ...patch } as GatewayRecord;
  publishMetrics(m, record, T + 200);
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('metric dimensions', () => {
  it('keep a catalog model under its own name', () => {
    const [, byModel] = published({ provider: 'openai', model: 'gpt-4o' });
    expect(byModel).toMatchObject({ provider: 'openai', model: 'gpt-4o' });
  });

  it('report a model outside the catalog as other, however many a caller invents', () => {
    const models = new Set<unknown>();
    for (let i = 0; i < 20; i++) models.add(published({ provider: 'openai', model: `made-up-${i}-${'x'.repeat(i)}` })[1]?.model);
    expect([...models]).toEqual(['other']);
  });

  it('report an unknown provider as other, and its model with it', () => {
    const [all, byModel] = published({ provider: 'no-such-provider-7', model: 'gpt-4o' });
    expect(all).toMatchObject({ provider: 'other' });
    expect(byModel).toMatchObject({ provider: 'other', model: 'other' });
  });
});
