/**
 * The `otel` gateway hook: one OpenTelemetry trace per gateway request, sent over OTLP/HTTP JSON
 * to the operator's collector (OTEL_EXPORTER_OTLP_ENDPOINT). Spans are batched off the request
 * path (every second, or every 100 requests); a collector that fails or is down loses those spans,
 * with a warning, and never touches a request.
 */
import type { OtelConfig } from '../config.ts';
import type { GatewayHook } from '../kernel/lifecycle.ts';
import type { Logger } from '../ports/logger.ts';
import { exportRequest, traceOf, type OtlpSpan } from './otel-trace.ts';

export interface OtelHookDeps {
  config: OtelConfig;
  logger: Logger;
  now: () => number;
  /** Batching bounds (tests shorten them). */
  maxRequests?: number;
  waitMs?: number;
  timeoutMs?: number;
}

export function otelHook(deps: OtelHookDeps): GatewayHook {
  const url = `${deps.config.endpoint}/v1/traces`;
  const maxRequests = deps.maxRequests ?? 100;
  const waitMs = deps.waitMs ?? 1000;
  const timeoutMs = deps.timeoutMs ?? 5000;
  let pending: OtlpSpan[] = [];
  let requests = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const inFlight = new Set<Promise<void>>();

  const post = async (spans: OtlpSpan[]): Promise<void> => {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { ...deps.config.headers, 'content-type': 'application/json' },
        body: JSON.stringify(exportRequest(deps.config.serviceName, spans)),
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.body?.cancel();
      if (!res.ok) deps.logger.warn('OpenTelemetry collector refused spans; they are dropped', { status: res.status, spans: spans.length });
    } catch (err) {
      deps.logger.warn('OpenTelemetry collector unreachable; spans dropped', { spans: spans.length, error: err instanceof Error ? err.message : String(err) });
    }
  };

  const send = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const spans = pending;
    pending = [];
    requests = 0;
    const p = post(spans).finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  return {
    name: 'otel',
    complete(record) {
      pending.push(...traceOf(record, deps.now()));
      if (++requests >= maxRequests) send();
      else if (!timer) {
        timer = setTimeout(send, waitMs);
        timer.unref?.();
      }
    },
    async flush() {
      await null;
      send();
      await Promise.all(inFlight);
    },
  };
}
