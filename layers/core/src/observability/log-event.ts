/**
 * The log event: one per gateway request (or custom log), built from the GatewayRecord after the
 * response, carried by the `logs` queue to the ingest worker and stored as one table item. Flat,
 * so the worker, the filters and the rollups read fields directly.
 */
import { assembleStream } from './stream-log.ts';
import type { GatewayRecord, HookResults } from '../kernel/lifecycle.ts';
import type { BlobStore } from '../ports/blob.ts';
import { redact, redactAttributes } from '../security/redact.ts';
import { dayKey, iso } from './time.ts';

/**
 * Bodies larger than this (JSON bytes) go to blob storage; the event keeps a reference. Every KB
 * in the log item costs a DynamoDB write unit and is stored for the retention at ten times S3's
 * price, so past about 4 KB one S3 PUT is the cheaper home (docs/deploy.md, "Cost").
 */
export const INLINE_BODY_BYTES = 4 * 1024;
/** Metadata beyond this is cut down so that an event always fits a queue message. */
const MAX_METADATA_BYTES = 16 * 1024;

/** Metadata keys promoted to fields of their own. */
export const SPECIAL_METADATA_KEYS = ['_user', '_prompt', '_organisation', '_environment'] as const;

export type LogSource = 'gateway' | 'custom';

export interface LogEvent {
  /** Version of this shape. */
  v: 1;
  id: string;
  source: LogSource;
  organisation_id: string | null;
  /** Null when the request was refused before its key was known. */
  workspace_id: string | null;
  /** When the request arrived (ISO 8601) and the same in milliseconds. */
  created_at: string;
  started_ms: number;
  trace_id: string;
  span_id: string | null;
  parent_span_id: string | null;
  span_name: string | null;
  api_key_id: string | null;
  /** The user the API key belongs to. */
  key_user_id: string | null;
  config_id: string | null;
  config_source: string | null;
  /** The provider as the request named it, and the service behind it (`openai`). */
  provider: string | null;
  ai_service: string | null;
  model: string | null;
  endpoint: string;
  method: string;
  path: string;
  stream: boolean;
  status_code: number;
  is_success: boolean;
  error_code: string | null;
  error_message: string | null;
  /** Milliseconds: until the response ended, until the provider's headers, until the first byte of a stream. */
  total_ms: number;
  upstream_ms: number | null;
  ttft_ms: number | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  /** Micro-dollars (1e-6 USD) charged, and what a cache hit saved. */
  cost_micros: number;
  /** Set when the answer reported usage but its model has no price (docs/pricing.md). */
  cost_unpriced?: true;
  cache_savings_micros: number;
  cache_status: string | null;
  /** Retries made; -1 when they ran out. */
  retries: number;
  /** The config target that answered (`config.targets[1]`). */
  last_used_option_index: string | null;
  /** A fallback target (not the first) answered. */
  fallback: boolean;
  cancelled: boolean;
  metadata: Record<string, unknown>;
  /** From `_user` (or the body's `user`), `_prompt`, `_organisation`, `_environment`. */
  user: string | null;
  prompt_slug: string | null;
  /** The prompt version the request was rendered from (absent for requests without one). */
  prompt_id?: string;
  prompt_version_id?: string;
  prompt_version?: number;
  organisation: string | null;
  environment: string | null;
  request_body?: unknown;
  request_body_ref?: string;
  request_bytes: number | null;
  response_body?: unknown;
  response_body_ref?: string;
  response_bytes: number | null;
  /** Set when a body could not be stored whole (blob storage failed): the first bytes, as text. */
  body_truncated?: boolean;
  /** Every guardrail hook's verdict, of every target called (absent: no hook ran). */
  hook_results?: HookResults;
  /** MCP gateway calls: the server's slug, the JSON-RPC method, the tool, prompt or resource named. */
  mcp_server?: string;
  mcp_method?: string;
  mcp_name?: string;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null);

/** The service behind a provider: `@my-openai` (a managed provider) has no service name of its own. */
export function aiServiceOf(provider: string | null | undefined): string | null {
  if (!provider) return null;
  return provider.startsWith('@') ? null : provider;
}

/**
 * What the service sets itself (ids, the caller's organisation and workspace, times, enums): every
 * other string attribute may come from the request (the trace id and span headers, the path, the
 * provider, model and config named, metadata's `_user` ...) and is redacted like a body.
 */
const OWN_ATTRIBUTES: ReadonlySet<string> = new Set<keyof LogEvent>([
  'id',
  'source',
  'organisation_id',
  'workspace_id',
  'created_at',
  'api_key_id',
  'key_user_id',
  'endpoint',
  'config_source',
  'cache_status',
]);

/** The event with the secrets in its request-derived attributes replaced; bodies, metadata and hook results are redacted where they are set. */
export const redactEvent = (event: LogEvent): LogEvent => redactAttributes(event, OWN_ATTRIBUTES);

/** Metadata as logged: secrets redacted, and bounded so the event fits a queue message. */
export function logMetadata(metadata: Record<string, unknown>): Record<string, unknown> {
  const safe = redact(metadata) as Record<string, unknown>;
  if (Buffer.byteLength(JSON.stringify(safe)) <= MAX_METADATA_BYTES) return safe;
  const out: Record<string, unknown> = {};
  let bytes = 0;
  for (const [k, v] of Object.entries(safe)) {
    const value = typeof v === 'string' ? v.slice(0, 512) : JSON.stringify(v).slice(0, 512);
    bytes += k.length + value.length + 8;
    if (bytes > MAX_METADATA_BYTES) break;
    out[k.slice(0, 64)] = value;
  }
  return out;
}

export interface BodyOptions {
  blobs: BlobStore;
  /** Told when a body could not be offloaded. */
  onError?: (err: unknown) => void;
}

/** Where the bodies of a log go in blob storage. */
export const bodyKey = (event: Pick<LogEvent, 'workspace_id' | 'started_ms' | 'id'>, kind: 'request' | 'response'): string =>
  `logs/${event.workspace_id ?? '-'}/${dayKey(event.started_ms)}/${event.id}/${kind}.json`;

/** Puts a body on the event: inline when small, else in blob storage with a reference. */
export async function attachBody(event: LogEvent, kind: 'request' | 'response', value: unknown, opts: BodyOptions): Promise<void> {
  if (value === undefined) return;
  const safe = redact(value);
  const text = JSON.stringify(safe) ?? 'null';
  const bytes = Buffer.byteLength(text);
  event[`${kind}_bytes`] = bytes;
  if (bytes <= INLINE_BODY_BYTES) {
    event[`${kind}_body`] = safe;
    return;
  }
  const key = bodyKey(event, kind);
  try {
    await opts.blobs.put(key, Buffer.from(text), 'application/json');
    event[`${kind}_body_ref`] = key;
  } catch (err) {
    opts.onError?.(err);
    event[`${kind}_body`] = text.slice(0, INLINE_BODY_BYTES);
    event.body_truncated = true;
  }
}

export interface FromRecordOptions extends BodyOptions {
  /** When `complete` ran (ms): the end of a request whose body never ended. */
  now: number;
  /** What a cache hit would have cost without the cache (micro-dollars). */
  savingsMicros?: number;
}

/** Beyond this, the checks' own `data` is left out of the logged hook results (the verdicts stay). */
const MAX_HOOK_RESULTS_BYTES = 16 * 1024;

/** Hook results as logged: redacted, and bounded so that the event fits a queue message. */
function logHookResults(results: HookResults): HookResults {
  const safe = redact(results) as HookResults;
  if (Buffer.byteLength(JSON.stringify(safe)) <= MAX_HOOK_RESULTS_BYTES) return safe;
  const lean = (list: HookResults['before_request_hooks']) =>
    list.slice(0, 50).map((h) => ({ ...h, feedback: null, checks: h.checks.slice(0, 50).map((c) => ({ ...c, data: null })) }));
  return { before_request_hooks: lean(safe.before_request_hooks), after_request_hooks: lean(safe.after_request_hooks) };
}

/** The log event of one gateway request. */
export async function fromRecord(r: GatewayRecord, opts: FromRecordOptions): Promise<LogEvent> {
  const p = r.principal;
  const meta = r.metadata ?? {};
  const usage = r.usage;
  const status = r.status ?? 500;
  const end = r.endedAt ?? r.upstreamHeadersAt ?? opts.now;
  const bodyUser = typeof r.request?.user === 'string' ? r.request.user : null;
  const event: LogEvent = redactEvent({
    v: 1,
    id: r.id,
    source: 'gateway',
    organisation_id: p?.organisationId ?? null,
    workspace_id: p?.workspaceId ?? null,
    created_at: iso(r.startedAt),
    started_ms: r.startedAt,
    trace_id: r.traceId,
    span_id: r.spanId ?? null,
    parent_span_id: r.parentSpanId ?? null,
    span_name: r.spanName ?? null,
    api_key_id: p?.keyId ?? null,
    key_user_id: p?.userId ?? null,
    config_id: r.configId ?? null,
    config_source: r.configSource ?? null,
    provider: r.provider ?? null,
    ai_service: aiServiceOf(r.provider),
    model: r.model ?? null,
    endpoint: r.endpoint,
    method: r.method,
    path: r.path,
    stream: r.stream,
    status_code: status,
    is_success: status >= 200 && status < 300,
    error_code: r.errorCode ?? null,
    error_message: r.errorMessage ?? null,
    total_ms: Math.max(0, end - r.startedAt),
    upstream_ms: r.upstreamHeadersAt === undefined ? null : Math.max(0, r.upstreamHeadersAt - r.startedAt),
    ttft_ms: r.stream && r.firstByteAt !== undefined ? Math.max(0, r.firstByteAt - r.startedAt) : null,
    prompt_tokens: usage?.prompt_tokens ?? 0,
    completion_tokens: usage?.completion_tokens ?? 0,
    total_tokens: usage?.total_tokens ?? 0,
    cached_tokens: usage?.cached_tokens ?? 0,
    reasoning_tokens: usage?.reasoning_tokens ?? 0,
    cost_micros: r.costMicros ?? 0,
    ...(r.unpriced ? { cost_unpriced: true as const } : {}),
    cache_savings_micros: opts.savingsMicros ?? 0,
    cache_status: r.cacheStatus ?? null,
    retries: r.retries ?? 0,
    last_used_option_index: r.targetPath ?? null,
    fallback: r.fallback === true,
    cancelled: r.cancelled === true,
    metadata: logMetadata(meta),
    user: str(meta._user) ?? bodyUser,
    prompt_slug: str(meta._prompt),
    organisation: str(meta._organisation),
    environment: str(meta._environment),
    request_bytes: null,
    response_bytes: r.responseBytes ?? null,
  });
  if (r.hookResults) event.hook_results = logHookResults(r.hookResults);
  if (r.mcp)
    Object.assign(
      event,
      redactAttributes({ mcp_server: r.mcp.server, mcp_method: r.mcp.method, ...(r.mcp.name ? { mcp_name: r.mcp.name } : {}) }, OWN_ATTRIBUTES),
    );
  if (r.prompt) Object.assign(event, { prompt_id: r.prompt.id, prompt_version_id: r.prompt.versionId, prompt_version: r.prompt.version });
  await attachBody(event, 'request', r.request, opts);
  // A refusal's answer is the gateway's own error; a provider's answer is kept as JSON, a stream
  // as the completion it amounted to.
  const response =
    r.response ??
    (r.streamText ? assembleStream(r.streamText) : undefined) ??
    (r.errorCode || r.errorMessage ? { error: { message: r.errorMessage ?? null, code: r.errorCode ?? null } } : undefined);
  const bytes = event.response_bytes;
  await attachBody(event, 'response', response, opts);
  // The byte count is what the client received, not the size of the logged JSON.
  if (bytes !== null) event.response_bytes = bytes;
  return event;
}

export const isCacheHit = (status: string | null | undefined): boolean => status === 'HIT' || status === 'SEMANTIC HIT';
