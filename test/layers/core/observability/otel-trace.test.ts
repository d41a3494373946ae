/** The OTLP/HTTP JSON encoding of a gateway request, the traceparent parser and the OTEL_* settings. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../../layers/core/src/config.ts';
import { parseTraceparent } from '../../../../layers/core/src/gateway/flight.ts';
import type { GatewayRecord } from '../../../../layers/core/src/kernel/lifecycle.ts';
import { attributes, exportRequest, traceOf, unixNano } from '../../../../layers/core/src/observability/otel-trace.ts';

const T0 = 1_764_000_000_123;
const record = (extra: Partial<GatewayRecord> = {}): GatewayRecord => ({
  id: 'log-1',
  traceId: 'gw-trace',
  endpoint: 'embed',
  method: 'POST',
  path: '/v1/embeddings',
  startedAt: T0,
  executeStartedAt: T0 + 5,
  upstreamHeadersAt: T0 + 40,
  endedAt: T0 + 50,
  metadata: {},
  stream: false,
  provider: 'openai',
  model: 'text-embedding-3-small',
  sentModel: 'text-embedding-3-small',
  status: 502,
  cacheStatus: 'MISS',
  usage: { prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 },
  costMicros: 1500,
  ...extra,
});

describe('OTLP JSON encoding', () => {
  it('writes nanosecond times and int64 values as decimal strings, fractions as doubles, skipping unset values', () => {
    expect(unixNano(T0)).toBe('1764000000123000000');
    expect(attributes({ a: 'x', b: 3, c: 0.5, d: true, e: undefined, f: '' })).toEqual([
      { key: 'a', value: { stringValue: 'x' } },
      { key: 'b', value: { intValue: '3' } },
      { key: 'c', value: { doubleValue: 0.5 } },
      { key: 'd', value: { boolValue: true } },
    ]);
  });

  it('builds a SERVER root and a CLIENT provider span from the record, the root an error on 5xx', () => {
    const [root, call, ...rest] = traceOf(record({ traceParent: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) } }), T0 + 99);
    expect(rest).toEqual([]);
    expect(root).toMatchObject({ traceId: 'a'.repeat(32), parentSpanId: 'b'.repeat(16), name: 'POST /v1/embeddings', kind: 2, status: { code: 2 } });
    expect(root!.startTimeUnixNano).toBe(unixNano(T0));
    expect(root!.endTimeUnixNano).toBe(unixNano(T0 + 50));
    expect(root!.attributes).toEqual(
      expect.arrayContaining([
        { key: 'gen_ai.operation.name', value: { stringValue: 'embeddings' } },
        { key: 'gen_ai.usage.input_tokens', value: { intValue: '7' } },
        { key: 'gantry.cost_usd', value: { doubleValue: 0.0015 } },
        { key: 'http.response.status_code', value: { intValue: '502' } },
      ]),
    );
    expect(call).toMatchObject({
      traceId: 'a'.repeat(32),
      parentSpanId: root!.spanId,
      kind: 3,
      startTimeUnixNano: unixNano(T0 + 5),
      endTimeUnixNano: unixNano(T0 + 50),
    });
    expect(call!.spanId).not.toBe(root!.spanId);
  });

  it('makes a cache hit an INTERNAL cache span, a random trace id without traceparent, and one span per guardrail hook', () => {
    const outcome = { id: 'pii', type: 'guardrail' as const, verdict: false, deny: true, checks: [], feedback: 'the prompt said secret', execution_time: 12 };
    const spans = traceOf(record({ status: 200, cacheStatus: 'HIT', hookResults: { before_request_hooks: [outcome], after_request_hooks: [] } }), T0);
    expect(spans[0]!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(spans[0]!.parentSpanId).toBeUndefined();
    expect(spans[0]!.status.code).toBe(0);
    expect(spans[1]).toMatchObject({ name: 'gantry cache', kind: 1 });
    expect(spans[2]).toMatchObject({
      name: 'gantry before_request_hook',
      startTimeUnixNano: unixNano(T0 + 5),
      endTimeUnixNano: unixNano(T0 + 17),
      status: { code: 2 },
    });
    expect(JSON.stringify(spans)).not.toContain('the prompt said secret');
  });

  it('wraps spans in resourceSpans[].scopeSpans[].spans[] under the service name', () => {
    const body = exportRequest('svc', traceOf(record(), T0));
    expect(body.resourceSpans[0]!.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'svc' } });
    expect(body.resourceSpans[0]!.scopeSpans[0]!.spans).toHaveLength(2);
  });
});

describe('traceparent', () => {
  it('accepts the version 00 layout and rejects malformed or all-zero ids', () => {
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
    });
    for (const bad of [
      null,
      '',
      '00-xyz-00f067aa0ba902b7-01',
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`,
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
  });
});

describe('OTEL_* settings', () => {
  const base = { TABLE_NAME: 't' };
  it('is off without an endpoint, and reads the endpoint, headers and service name', () => {
    expect(loadConfig(base).otel).toBeUndefined();
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example:4318/', OTEL_EXPORTER_OTLP_HEADERS: 'a=1, b=x%2Cy' }).otel).toEqual({
      endpoint: 'https://otel.example:4318',
      headers: { a: '1', b: 'x,y' },
      serviceName: 'gantry',
    });
  });
  it('refuses a non-http(s) endpoint and malformed headers, naming the variable and not the value', () => {
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://otel.example' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_HEADERS: 'secret-token' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_HEADERS: 'secret-token' })).toThrow(
      /^(?!.*secret-token).*OTEL_EXPORTER_OTLP_HEADERS/,
    );
  });
});
