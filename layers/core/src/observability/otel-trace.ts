/**
 * One gateway request as an OpenTelemetry trace, in the OTLP/HTTP JSON encoding (the protobuf
 * messages' JSON mapping, with trace and span ids as lowercase hex and 64-bit integers, nanosecond
 * times included, as decimal strings). Built only from the record's timestamps and figures: never
 * from headers or bodies, so no key, token or prompt can reach the collector.
 */
import { randomBytes } from 'node:crypto';
import type { GatewayRecord } from '../kernel/lifecycle.ts';
import type { HookOutcome } from '../kernel/guardrails.ts';
import { isCacheHit } from './log-event.ts';

export type OtlpAnyValue = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean };
export interface OtlpAttribute {
  key: string;
  value: OtlpAnyValue;
}

/** OTLP SpanKind and Status.code numbers (trace.proto). */
export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;
export const STATUS_CODE = { unset: 0, ok: 1, error: 2 } as const;

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpAttribute[];
  status: { code: number };
}

export interface ExportTraceServiceRequest {
  resourceSpans: {
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[];
  }[];
}

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** Clock milliseconds as OTLP's nanoseconds, a decimal string (past 2^53, a JSON number would round). */
export const unixNano = (ms: number): string => (BigInt(Math.round(ms)) * 1_000_000n).toString();

/** Attributes from the values that are set; integers as OTLP int64 strings. */
export function attributes(values: Record<string, string | number | boolean | undefined>): OtlpAttribute[] {
  const out: OtlpAttribute[] = [];
  for (const [key, v] of Object.entries(values)) {
    if (v === undefined || v === '') continue;
    if (typeof v === 'string') out.push({ key, value: { stringValue: v } });
    else if (typeof v === 'boolean') out.push({ key, value: { boolValue: v } });
    else if (Number.isInteger(v)) out.push({ key, value: { intValue: String(v) } });
    else out.push({ key, value: { doubleValue: v } });
  }
  return out;
}

/** The GenAI semantic conventions' operation names, by gateway endpoint. */
const OPERATION: Partial<Record<GatewayRecord['endpoint'], string>> = {
  chatComplete: 'chat',
  complete: 'text_completion',
  embed: 'embeddings',
  imageGenerate: 'generate_content',
};

function rootAttributes(r: GatewayRecord): OtlpAttribute[] {
  return attributes({
    'http.request.method': r.method,
    'url.path': r.path,
    'http.response.status_code': r.status,
    'error.type': r.errorCode,
    'gen_ai.operation.name': OPERATION[r.endpoint] ?? r.endpoint,
    'gen_ai.system': r.provider,
    'gen_ai.request.model': r.sentModel ?? (typeof r.request?.model === 'string' ? r.request.model : undefined),
    'gen_ai.response.model': r.model,
    'gen_ai.usage.input_tokens': r.usage?.prompt_tokens,
    'gen_ai.usage.output_tokens': r.usage?.completion_tokens,
    'gantry.cost_usd': r.costMicros === undefined ? undefined : r.costMicros / 1e6,
    'gantry.cache_status': r.cacheStatus,
    'gantry.trace_id': r.traceId,
    'gantry.log_id': r.id,
    'gantry.stream': r.stream,
    'gantry.cancelled': r.cancelled,
  });
}

/** The provider call (or the cache that answered instead), from routing's start to the last byte. */
function callSpan(r: GatewayRecord, base: Pick<OtlpSpan, 'traceId' | 'parentSpanId'>, end: number): OtlpSpan | undefined {
  if (r.executeStartedAt === undefined || r.upstreamHeadersAt === undefined) return undefined;
  const cached = isCacheHit(r.cacheStatus);
  return {
    ...base,
    spanId: hex(8),
    name: cached ? 'gantry cache' : `${OPERATION[r.endpoint] ?? r.endpoint} ${r.sentModel ?? r.model ?? ''}`.trim(),
    kind: cached ? SPAN_KIND.internal : SPAN_KIND.client,
    startTimeUnixNano: unixNano(r.executeStartedAt),
    endTimeUnixNano: unixNano(Math.max(r.executeStartedAt, end)),
    attributes: attributes({
      'gen_ai.operation.name': OPERATION[r.endpoint] ?? r.endpoint,
      'gen_ai.system': cached ? undefined : r.provider,
      'gen_ai.request.model': r.sentModel,
      'gen_ai.response.model': r.model,
      'gantry.cache_status': r.cacheStatus,
      'gantry.target': r.targetPath,
      'gantry.retries': r.retries,
      'gantry.fallback': r.fallback,
      'gantry.upstream_headers_ms': Math.max(0, r.upstreamHeadersAt - r.executeStartedAt),
    }),
    status: { code: (r.status ?? 0) >= 400 ? STATUS_CODE.error : STATUS_CODE.unset },
  };
}

/**
 * Guardrail hooks report a duration but no start: before-request hooks are placed at routing's
 * start, after-request ones when the provider answered. Their feedback (which may quote the
 * prompt) is left out.
 */
function hookSpans(r: GatewayRecord, base: Pick<OtlpSpan, 'traceId' | 'parentSpanId'>): OtlpSpan[] {
  const at = (stage: 'before' | 'after'): number | undefined => (stage === 'before' ? r.executeStartedAt : r.upstreamHeadersAt);
  const span = (h: HookOutcome, stage: 'before' | 'after'): OtlpSpan[] => {
    const start = at(stage);
    if (start === undefined) return [];
    return [
      {
        ...base,
        spanId: hex(8),
        name: `gantry ${stage}_request_hook`,
        kind: SPAN_KIND.internal,
        startTimeUnixNano: unixNano(start),
        endTimeUnixNano: unixNano(start + Math.max(0, h.execution_time)),
        attributes: attributes({ 'gantry.hook.id': h.id, 'gantry.hook.type': h.type, 'gantry.hook.verdict': h.verdict, 'gantry.hook.deny': h.deny }),
        status: { code: h.verdict ? STATUS_CODE.unset : STATUS_CODE.error },
      },
    ];
  };
  const results = r.hookResults;
  if (!results) return [];
  return [...results.before_request_hooks.flatMap((h) => span(h, 'before')), ...results.after_request_hooks.flatMap((h) => span(h, 'after'))];
}

/**
 * The request's spans: a SERVER root (the gateway request, child of the caller's `traceparent` span
 * when there was one) and its children.
 */
export function traceOf(r: GatewayRecord, now: number): OtlpSpan[] {
  const traceId = r.traceParent?.traceId ?? hex(16);
  const end = Math.max(r.startedAt, r.endedAt ?? now);
  const root: OtlpSpan = {
    traceId,
    spanId: hex(8),
    ...(r.traceParent ? { parentSpanId: r.traceParent.spanId } : {}),
    name: `${r.method} ${r.path}`,
    kind: SPAN_KIND.server,
    startTimeUnixNano: unixNano(r.startedAt),
    endTimeUnixNano: unixNano(end),
    attributes: rootAttributes(r),
    // A server span is an error only for 5xx: a 4xx is the caller's mistake.
    status: { code: (r.status ?? 500) >= 500 ? STATUS_CODE.error : STATUS_CODE.unset },
  };
  const child = { traceId, parentSpanId: root.spanId };
  const call = callSpan(r, child, end);
  return [root, ...(call ? [call] : []), ...hookSpans(r, child)];
}

/** One export request carrying every span, under this service's resource. */
export function exportRequest(serviceName: string, spans: OtlpSpan[]): ExportTraceServiceRequest {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributes({ 'service.name': serviceName, 'telemetry.sdk.name': 'gantry', 'telemetry.sdk.language': 'nodejs' }) },
        scopeSpans: [{ scope: { name: 'gantry.gateway' }, spans }],
      },
    ],
  };
}
