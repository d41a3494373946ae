/**
 * `POST /v1/logs`: a log the client made itself (a call Gantry did not proxy), in the reference
 * API's CustomLog shape. It becomes a log event like any other (source `custom`): queued, stored,
 * rolled up. Request and response headers are not kept (they carry credentials).
 */
import { randomUUID } from 'node:crypto';
import { newLogId } from './log-id.ts';
import { toUsage } from '../kernel/usage.ts';
import type { Principal } from '../kernel/principal.ts';
import type { BlobStore } from '../ports/blob.ts';
import { attachBody, logMetadata, redactEvent, type LogEvent } from './log-event.ts';
import { iso } from './time.ts';

export interface CustomLogInput {
  request: { url: string; method?: string | undefined; body?: unknown };
  response: { status: number; body?: unknown; response_time?: number | undefined };
  metadata?: Record<string, unknown> | undefined;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

export async function customLogEvent(input: CustomLogInput, principal: Principal, now: number, blobs: BlobStore): Promise<LogEvent> {
  const meta = input.metadata ?? {};
  const reqBody = obj(input.request.body);
  const resBody = obj(input.response.body);
  const usage = toUsage(resBody.usage as Parameters<typeof toUsage>[0]);
  const status = input.response.status;
  let url: URL | undefined;
  try {
    url = new URL(input.request.url);
  } catch {
    url = undefined;
  }
  const took = Math.max(0, Math.round(input.response.response_time ?? 0));
  const id = newLogId(now - took);
  const userMeta = Object.fromEntries(Object.entries(meta).filter(([k]) => !['trace_id', 'span_id', 'span_name', 'parent_span_id'].includes(k)));
  const event: LogEvent = redactEvent({
    v: 1,
    id,
    source: 'custom',
    organisation_id: principal.organisationId,
    workspace_id: principal.workspaceId,
    created_at: iso(now - took),
    started_ms: now - took,
    trace_id: str(meta.trace_id) ?? randomUUID(),
    span_id: str(meta.span_id),
    parent_span_id: str(meta.parent_span_id),
    span_name: str(meta.span_name),
    api_key_id: principal.keyId,
    key_user_id: principal.userId,
    config_id: null,
    config_source: null,
    provider: url?.hostname ?? null,
    ai_service: null,
    model: str(reqBody.model) ?? str(resBody.model),
    endpoint: 'custom',
    method: (input.request.method ?? 'POST').toUpperCase(),
    path: url ? url.pathname : input.request.url,
    stream: reqBody.stream === true,
    status_code: status,
    is_success: status >= 200 && status < 300,
    error_code: null,
    error_message: null,
    total_ms: took,
    upstream_ms: null,
    ttft_ms: null,
    prompt_tokens: usage?.prompt_tokens ?? 0,
    completion_tokens: usage?.completion_tokens ?? 0,
    total_tokens: usage?.total_tokens ?? 0,
    cached_tokens: usage?.cached_tokens ?? 0,
    reasoning_tokens: usage?.reasoning_tokens ?? 0,
    cost_micros: 0,
    cache_savings_micros: 0,
    cache_status: null,
    retries: 0,
    last_used_option_index: null,
    fallback: false,
    cancelled: false,
    metadata: logMetadata(userMeta),
    user: str(meta._user) ?? str(reqBody.user),
    prompt_slug: str(meta._prompt),
    organisation: str(meta._organisation),
    environment: str(meta._environment),
    request_bytes: null,
    response_bytes: null,
  });
  await attachBody(event, 'request', input.request.body ?? null, { blobs });
  await attachBody(event, 'response', input.response.body ?? null, { blobs });
  return event;
}
