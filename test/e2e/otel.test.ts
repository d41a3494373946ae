/**
 * With OTEL_EXPORTER_OTLP_ENDPOINT set, every gateway request is exported as an OpenTelemetry trace
 * over OTLP/HTTP JSON to a real local receiver: a SERVER root span and the provider call, GenAI
 * attributes, the caller's traceparent continued, and nothing secret. A failing or absent
 * collector never affects the request.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { startMockServer, type MockServer } from '../support/mock-http.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { until as waitUntil } from '../support/until.ts';
import type { ExportTraceServiceRequest, OtlpSpan } from '../../layers/core/src/observability/otel-trace.ts';

type Span = OtlpSpan;
type Export = ExportTraceServiceRequest;

const PROVIDER_KEY = 'sk-provider-secret-4d1e9';
const attr = (s: Span, key: string): unknown => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v ? Object.values(v)[0] : undefined;
};
const spansOf = (c: MockServer): Span[] => c.received.flatMap((r) => (r.json as Export).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));

const until = <T>(probe: () => T | undefined): Promise<T> => waitUntil(probe, 'spans at the collector', undefined, 50);

describe.each(['direct', 'lambda'] as const)('OpenTelemetry export (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let collector: MockServer;
  let key: string;

  const chat = (g: TestGantry, k: string, headers: Record<string, string> = {}) =>
    fetch(`${g.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': k,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: `Bearer ${PROVIDER_KEY}`,
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] }),
    });

  beforeAll(async () => {
    [mock, collector] = await Promise.all([startMockOpenAI(), startMockServer(() => ({ status: 200, json: {} }))]);
    gw = await startGantry(mode, {
      OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/`,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=tok%3D1',
      OTEL_SERVICE_NAME: 'gantry-test',
    });
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close(), collector?.close()]);
  });
  beforeEach(() => {
    collector.received.length = 0;
    collector.queue.length = 0;
  });

  it('exports the request as a root and a provider span with GenAI attributes, continuing the traceparent', async () => {
    const parentTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentSpan = '00f067aa0ba902b7';
    const res = await chat(gw, key, { traceparent: `00-${parentTrace}-${parentSpan}-01`, 'x-gw-trace-id': `otel-${mode}` });
    expect(res.status).toBe(200);
    await res.text();
    const spans = await until(() => (spansOf(collector).length >= 2 ? spansOf(collector) : undefined));

    const post = collector.received[0]!;
    expect(post.method).toBe('POST');
    expect(post.path).toBe('/v1/traces');
    expect(post.headers['content-type']).toBe('application/json');
    expect(post.headers['x-collector-token']).toBe('tok=1');
    const resource = (post.json as Export).resourceSpans[0]!.resource.attributes;
    expect(resource).toContainEqual({ key: 'service.name', value: { stringValue: 'gantry-test' } });

    const root = spans.find((s) => s.kind === 2)!;
    expect(root).toMatchObject({ traceId: parentTrace, parentSpanId: parentSpan, name: 'POST /v1/chat/completions' });
    expect(root.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(BigInt(root.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(root.startTimeUnixNano));
    expect(attr(root, 'gen_ai.system')).toBe('openai');
    expect(attr(root, 'gen_ai.operation.name')).toBe('chat');
    expect(attr(root, 'gen_ai.request.model')).toBe('gpt-4o-mini');
    expect(attr(root, 'gen_ai.response.model')).toBe('gpt-4o-mini');
    expect(attr(root, 'gen_ai.usage.input_tokens')).toBe('9');
    expect(attr(root, 'gen_ai.usage.output_tokens')).toBe('3');
    expect(attr(root, 'http.response.status_code')).toBe('200');
    expect(attr(root, 'gantry.trace_id')).toBe(`otel-${mode}`);
    expect(attr(root, 'gantry.log_id')).toBe(res.headers.get('x-gw-log-id'));
    expect(attr(root, 'gantry.cache_status')).toBe(res.headers.get('x-gw-cache-status'));
    expect(typeof attr(root, 'gantry.cost_usd')).toBe('number');

    const call = spans.find((s) => s.kind === 3)!;
    expect(call).toMatchObject({ traceId: parentTrace, parentSpanId: root.spanId });
    expect(attr(call, 'gen_ai.system')).toBe('openai');
    expect(BigInt(call.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(root.startTimeUnixNano));
    expect(BigInt(call.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(root.endTimeUnixNano));

    const exported = collector.received.map((r) => r.body).join('\n');
    expect(exported).not.toContain(PROVIDER_KEY);
    expect(exported).not.toContain(key);
    expect(exported).not.toContain('Hello');
  });

  it('starts a new trace without a (valid) traceparent', async () => {
    const res = await chat(gw, key, { traceparent: '00-not-a-trace-01' });
    expect(res.status).toBe(200);
    await res.text();
    const root = await until(() => spansOf(collector).find((s) => s.kind === 2));
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.parentSpanId).toBeUndefined();
  });

  it('answers as usual when the collector fails, and exports again once it recovers', async () => {
    collector.queue.push({ status: 500, json: { error: 'down' } });
    const first = await chat(gw, key);
    expect(first.status).toBe(200);
    expect(((await first.json()) as { choices: unknown[] }).choices).toHaveLength(1);
    await until(() => (collector.received.length >= 1 ? true : undefined));
    const second = await chat(gw, key);
    expect(second.status).toBe(200);
    await second.text();
    await until(() => (collector.received.length >= 2 ? true : undefined));
    expect(attr(spansOf({ ...collector, received: collector.received.slice(1) }).find((s) => s.kind === 2)!, 'gantry.log_id')).toBe(
      second.headers.get('x-gw-log-id'),
    );
  });

  it('answers as usual when the collector is down', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const down = await startGantry(mode, { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
    try {
      const downKey = await down.workspaceKey();
      const res = await chat(down, downKey);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { model: string }).model).toBe('gpt-4o-mini');
      await down.deps.gatewayHooks.find((h) => h.name === 'otel')!.flush!();
    } finally {
      await down.close();
    }
  });
});
