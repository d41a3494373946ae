/**
 * One gateway request in flight: what every phase of the pipeline reads and fills. Opened first
 * (`openRecord`), before anything can fail, so that every answer, refusals included, carries the
 * trace id and leaves a record for the hooks.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../deps.ts';
import type { Dialect } from './dialect.ts';
import type { EndpointSpec } from './endpoint.ts';
import { gatewayKeyFromBearer } from './headers.ts';
import type { GatewayHook, GatewayRecord } from '../kernel/lifecycle.ts';
import type { Logger } from '../ports/logger.ts';
import { newLogId } from '../observability/log-id.ts';
import type { ReadBody } from './request-body.ts';

const CACHE_DISABLED = 'DISABLED';

export interface Flight {
  spec: EndpointSpec;
  deps: CoreDeps;
  url: URL;
  /** The request's headers as the gateway reads them (a dialect may have moved the gateway key). */
  headers: Headers;
  /** The client's provider key when a dialect found it outside `Authorization`. */
  providerKey: string | undefined;
  dialect: Dialect | undefined;
  record: GatewayRecord;
  /** The gateway's own response headers, sent with every answer. */
  out: Record<string, string>;
  /** Runs the hooks' `complete`, once the response has ended (never delaying it). */
  done: () => void;
  /** The body the prompt phase read and left as it came (a Responses request without a Gantry prompt): readInput takes it, so it is parsed once. */
  body?: ReadBody;
}

export function openRecord(spec: EndpointSpec, req: Request, deps: CoreDeps, dialect: Dialect | undefined): Flight {
  const inbound = dialect?.inbound(req.headers);
  const headers = gatewayKeyFromBearer(inbound?.headers ?? req.headers);
  const traceId = headers.get('x-gw-trace-id') || randomUUID();
  const url = new URL(req.url);
  const startedAt = deps.clock.now();
  const record: GatewayRecord = {
    // The log id tells the start: with the workspace, it is the log item's key (observability/log-id.ts).
    id: newLogId(startedAt),
    traceId,
    endpoint: spec.endpoint,
    method: req.method,
    path: url.pathname,
    startedAt,
    metadata: {},
    stream: false,
    // The answer's x-gw-cache-status says DISABLED until the cache takes part; the log says the same.
    cacheStatus: CACHE_DISABLED,
  };
  const spanId = headers.get('x-gw-span-id');
  if (spanId) record.spanId = spanId;
  const parentSpanId = headers.get('x-gw-parent-span-id');
  if (parentSpanId) record.parentSpanId = parentSpanId;
  const spanName = headers.get('x-gw-span-name');
  if (spanName) record.spanName = spanName;
  const traceParent = parseTraceparent(headers.get('traceparent'));
  if (traceParent) record.traceParent = traceParent;
  return {
    spec,
    deps,
    url,
    headers,
    providerKey: inbound?.providerKey,
    dialect,
    record,
    // The log id: the request's log is GET /v1/logs/{id} once ingested.
    out: { 'x-gw-trace-id': traceId, 'x-gw-log-id': record.id, 'x-gw-cache-status': CACHE_DISABLED },
    done: () => completeLater(deps, record),
  };
}

/**
 * A W3C `traceparent` (version 00 layout), or undefined when absent or malformed: a bad one is
 * ignored, as the spec asks, rather than refused. All-zero ids are invalid.
 */
export function parseTraceparent(value: string | null): { traceId: string; spanId: string } | undefined {
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(value?.trim() ?? '');
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]!) || /^0+$/.test(m[3]!)) return undefined;
  return { traceId: m[2]!, spanId: m[3]! };
}

/** Runs the hooks' `settle` and `complete` after the response, never failing or delaying it. */
function completeLater(deps: CoreDeps, record: GatewayRecord): void {
  if (deps.gatewayHooks.length === 0) return;
  setImmediate(() => completeHooks(deps.gatewayHooks, record, deps.logger));
}

/**
 * Every hook's `settle`, then every hook's `complete`: the writers before the readers, in two
 * phases rather than by the hooks' order. One hook's failure is logged and stops no other.
 */
export function completeHooks(hooks: readonly GatewayHook[], record: GatewayRecord, logger: Pick<Logger, 'error'>): void {
  const failed = (hook: GatewayHook) => (err: unknown) => logger.error(`${hook.name} failed`, { error: err });
  for (const hook of hooks) {
    try {
      hook.settle?.(record);
    } catch (err) {
      failed(hook)(err);
    }
  }
  for (const hook of hooks) {
    try {
      const done = hook.complete?.(record);
      if (done instanceof Promise) done.catch(failed(hook));
    } catch (err) {
      failed(hook)(err);
    }
  }
}
