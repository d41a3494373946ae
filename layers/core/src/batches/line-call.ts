/**
 * One batch line through the gateway pipeline, exactly as a live request with the batch's headers
 * (captured at create): authentication, routing, fallback, retries, limits, guardrails, pricing,
 * and one request log whose metadata carries `_batch_id` and `_batch_custom_id`.
 */
import type { CoreDeps } from '../deps.ts';
import type { EndpointSpec } from '../gateway/endpoint.ts';
import { handleGatewayRequest } from '../gateway/pipeline.ts';
import { isRecord, tryParseJson } from '../http/json.ts';
import type { BatchRecord, LineOutcome } from '../store/batches.ts';
import type { InputLine } from './input.ts';

/** A body above this many bytes (UTF-8, as DynamoDB counts them) stays in blob storage, not in the line's table item (400 KB at most). */
const MAX_INLINE_BODY = 300_000;

export type SealedHeaders = Array<[string, string]>;

const cipherContext = (b: Pick<BatchRecord, 'id' | 'workspace_id'>) => ({ batch_id: b.id, workspace_id: b.workspace_id });

/** Hop-by-hop and body headers are the line's own; the rest is how the caller asked to be served. */
const NOT_CAPTURED =
  /^(host|content-length|content-type|connection|transfer-encoding|keep-alive|upgrade|te|trailer|expect|accept-encoding|x-gw-trace-id|x-gw-span-id|x-gw-parent-span-id|traceparent)$/i;

/** The caller's headers, encrypted: they hold the gateway key and perhaps provider credentials. */
export function sealHeaders(deps: CoreDeps, batch: Pick<BatchRecord, 'id' | 'workspace_id'>, headers: Headers): Promise<string> {
  const kept: SealedHeaders = [...headers].filter(([name]) => !NOT_CAPTURED.test(name));
  return deps.cipher.encrypt(JSON.stringify(kept), cipherContext(batch));
}

export async function openHeaders(deps: CoreDeps, batch: BatchRecord): Promise<SealedHeaders> {
  return JSON.parse(await deps.cipher.decrypt(batch.sealed_headers, cipherContext(batch))) as SealedHeaders;
}

/**
 * JSON with every character past ASCII escaped (`\u4e2d`): a header value is bytes, and a
 * custom_id may be any text; the gateway's JSON.parse reads the same string back.
 */
const asciiJson = (value: unknown): string => JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function lineHeaders(batch: BatchRecord, sealed: SealedHeaders, line: InputLine): Headers {
  const headers = new Headers(sealed);
  const own = tryParseJson(headers.get('x-gw-metadata') ?? '{}');
  const metadata = own.ok && isRecord(own.value) ? own.value : {};
  headers.set('x-gw-metadata', asciiJson({ ...metadata, _batch_id: batch.id, _batch_custom_id: line.custom_id }));
  headers.set('content-type', 'application/json');
  return headers;
}

type LineUsage = Pick<LineOutcome, 'input_tokens' | 'output_tokens' | 'cached_tokens' | 'reasoning_tokens'>;

/** Chat and completions say prompt/completion tokens, responses input/output: the same counts either way. */
function usageOf(body: unknown): LineUsage {
  const u = isRecord(body) && isRecord(body.usage) ? body.usage : {};
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v) : 0);
  const inDetails = u.prompt_tokens_details ?? u.input_tokens_details;
  const outDetails = u.completion_tokens_details ?? u.output_tokens_details;
  return {
    input_tokens: n(u.prompt_tokens ?? u.input_tokens),
    output_tokens: n(u.completion_tokens ?? u.output_tokens),
    cached_tokens: n(isRecord(inDetails) ? inDetails.cached_tokens : undefined),
    reasoning_tokens: n(isRecord(outDetails) ? outDetails.reasoning_tokens : undefined),
  };
}

const costMicros = (header: string | null): number => {
  const usd = header === null ? Number.NaN : Number(header);
  return Number.isFinite(usd) ? Math.round(usd * 1_000_000) : 0;
};

/** Runs the line; its answer as the output line will carry it. */
export async function callLine(
  deps: CoreDeps,
  spec: EndpointSpec,
  batch: BatchRecord,
  sealed: SealedHeaders,
  line: InputLine,
  requestId: string,
  signal?: AbortSignal,
): Promise<LineOutcome> {
  const req = new Request(`http://gantry.batch${line.url}`, { method: 'POST', headers: lineHeaders(batch, sealed, line), body: JSON.stringify(line.body) });
  const res = await handleGatewayRequest(spec, req, deps, signal ? { clientSignal: signal } : undefined);
  const text = await res.text();
  const parsed = tryParseJson(text);
  const json = parsed.ok ? parsed.value : { error: { message: text, type: 'invalid_response', param: null, code: null } };
  const out: LineOutcome = {
    status_code: res.status,
    response_request_id: res.headers.get('x-gw-log-id') ?? requestId,
    ...usageOf(json),
    cost_micros: costMicros(res.headers.get('x-gw-cost')),
  };
  const body = JSON.stringify(json);
  if (Buffer.byteLength(body) <= MAX_INLINE_BODY) return { ...out, body };
  const key = `batches/${batch.workspace_id}/${batch.id}/lines/${line.index}`;
  await deps.blobs.put(key, Buffer.from(body), 'application/json');
  return { ...out, body_blob: key };
}
