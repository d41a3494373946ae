/**
 * One call to a native provider: the OpenAI request becomes the provider's (URL, headers, body,
 * signature), the provider's answer becomes OpenAI's (JSON, SSE chunks or error), with the usage
 * always reported through `onOutcome`, streamed or not, asked for or not.
 */
import { readCapped, rewriteStream } from '../../http/node-streams.ts';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { ValidationError } from '../../http/errors.ts';
import type { EndpointType } from '../types.ts';
import type { NativeProvider, OutgoingRequest, ProviderRequestContext, StreamOutcome } from '../transform.ts';
import { isRecord } from '../../http/json.ts';
import { optionString } from './chat-input.ts';
import { providerError, usageOf } from './chat-output.ts';

export interface SendRequest extends OutgoingRequest {
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

export interface SendResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable;
}

/** `UpstreamClient.send` fits this. */
export type Send = (req: SendRequest) => Promise<SendResponse>;

export interface NativeOutcome extends StreamOutcome {
  /** The status the client gets (the provider's). */
  status: number;
}

export interface NativeCall {
  provider: NativeProvider;
  endpoint: EndpointType;
  ctx: ProviderRequestContext;
  send: Send;
  /** `custom_host`, already SSRF-checked: replaces the provider's base URL. */
  baseUrl?: string | undefined;
  /** Extra request headers (forward_headers). */
  headers?: Record<string, string> | undefined;
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Called once, when the answer has been read or the stream ended (or was abandoned). */
  onOutcome?: ((outcome: NativeOutcome) => void) | undefined;
}

const MAX_ERROR_BYTES = 1 << 20;
const MAX_JSON_BYTES = 64 << 20;
/** Provider headers not passed on: the body they describe is rewritten. */
const REWRITTEN = /^(content-length|content-type|content-encoding|transfer-encoding|connection|keep-alive)$/i;

/** The provider request for an endpoint: URL from options, option headers, transformed body, credentials. */
export async function buildNativeRequest(
  provider: NativeProvider,
  endpoint: EndpointType,
  ctx: ProviderRequestContext,
  extra: { baseUrl?: string | undefined; headers?: Record<string, string> | undefined } = {},
): Promise<OutgoingRequest> {
  const route = provider.endpoints[endpoint];
  if (!route) throw ValidationError.field('provider', `provider ${provider.id} does not support the ${endpoint} endpoint`);
  const ep = route(ctx);
  // A custom host replaces every host of the provider.
  const base = extra.baseUrl ?? ep.baseUrl ?? provider.baseUrl(ctx);
  const headers: Record<string, string> = {
    ...extra.headers,
    'content-type': 'application/json',
    accept: ctx.stream ? 'text/event-stream, application/vnd.amazon.eventstream, application/json' : 'application/json',
    'accept-encoding': 'identity',
    'user-agent': 'gantry',
  };
  for (const [option, header] of Object.entries(provider.optionHeaders ?? {})) {
    const value = optionString(ctx, option);
    if (value) headers[header] = value;
  }
  const body = provider.transformRequest ? provider.transformRequest(endpoint, ctx.request, ctx) : ctx.request;
  const req: OutgoingRequest = { url: new URL(base + ep.path), method: ep.method, headers, body: ep.method === 'GET' ? undefined : JSON.stringify(body) };
  return provider.authenticate(req, ctx);
}

function keptHeaders(headers: IncomingHttpHeaders, contentType: string): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (!REWRITTEN.test(k)) out[k] = v;
  out['content-type'] = contentType;
  return out;
}

const jsonAnswer = (status: number, headers: IncomingHttpHeaders, value: unknown): SendResponse => {
  const bytes = Buffer.from(JSON.stringify(value));
  return { status, headers: { ...keptHeaders(headers, 'application/json'), 'content-length': String(bytes.length) }, body: Readable.from([bytes]) };
};

/**
 * Sends the call and answers in OpenAI's format. Errors keep the provider's status with an OpenAI
 * error body, so retries and fallbacks decide on it as for any provider.
 */
export async function callNative(call: NativeCall): Promise<SendResponse> {
  const { provider, endpoint, ctx } = call;
  let reported = false;
  const report = (o: NativeOutcome) => {
    if (reported) return;
    reported = true;
    call.onOutcome?.(o);
  };
  const req = await buildNativeRequest(provider, endpoint, ctx, { baseUrl: call.baseUrl, headers: call.headers });
  const res = await call.send({ ...req, timeoutMs: call.timeoutMs, signal: call.signal });
  const meta = { headers: res.headers };

  if (res.status >= 400) {
    const text = (await readCapped(res.body, MAX_ERROR_BYTES)).bytes.toString('utf8');
    const error = provider.transformError(res.status, text, meta);
    report({ status: res.status, error });
    return jsonAnswer(res.status, res.headers, error);
  }

  if (ctx.stream && provider.transformStream) {
    const transformer = provider.transformStream(endpoint, ctx);
    return {
      status: res.status,
      headers: { ...keptHeaders(res.headers, 'text/event-stream; charset=utf-8'), 'cache-control': 'no-cache' },
      body: rewriteStream(res.body, transformer, () => report({ status: res.status, ...transformer.outcome() })),
    };
  }

  const read = await readCapped(res.body, MAX_JSON_BYTES);
  const text = read.bytes.toString('utf8');
  const truncated = read.truncated;
  let json: unknown;
  try {
    if (truncated) throw new Error('too large');
    json = JSON.parse(text);
  } catch {
    const error = providerError(502, `The provider answered ${res.status} with a body that is not JSON`, 'invalid_provider_response');
    report({ status: 502, error });
    return jsonAnswer(502, res.headers, error);
  }
  const answer = provider.transformResponse ? provider.transformResponse(endpoint, json, ctx, meta) : json;
  const outcome: NativeOutcome = { status: res.status };
  const usage = usageOf(answer);
  if (usage) outcome.usage = usage;
  if (isRecord(answer) && typeof answer.model === 'string') outcome.model = answer.model;
  const first = isRecord(answer) && Array.isArray(answer.choices) ? answer.choices[0] : undefined;
  if (isRecord(first) && typeof first.finish_reason === 'string') outcome.finishReason = first.finish_reason as NativeOutcome['finishReason'] & string;
  report(outcome);
  return jsonAnswer(res.status, res.headers, answer);
}

export interface RawNativeCall extends Omit<NativeCall, 'onOutcome'> {
  /** The client's bytes, sent as they are, and their content type. */
  body?: string | Uint8Array | undefined;
  contentType?: string | undefined;
  /** The passthrough: this path and query below the provider's base URL (with `method`), errors relayed as they are. */
  path?: string | undefined;
  method?: string | undefined;
}

/**
 * A call whose body and answer the transforms do not touch: Azure's multipart endpoints and
 * speech (binary answers), streamed image generation, and the passthrough to any provider path.
 * The provider's URL, option headers and credentials apply; on the unified endpoints an error
 * still comes back in OpenAI's shape.
 */
export async function callNativeRaw(call: RawNativeCall): Promise<SendResponse> {
  const { provider, endpoint, ctx } = call;
  let path: string;
  let method: string;
  let base: string;
  if (call.path !== undefined) {
    path = call.path;
    method = call.method ?? 'POST';
    base = call.baseUrl ?? provider.baseUrl(ctx);
  } else {
    const route = provider.endpoints[endpoint];
    if (!route) throw ValidationError.field('provider', `provider ${provider.id} does not support the ${endpoint} endpoint`);
    const ep = route(ctx);
    path = ep.path;
    method = ep.method;
    base = call.baseUrl ?? ep.baseUrl ?? provider.baseUrl(ctx);
  }
  const headers: Record<string, string> = { ...call.headers, 'accept-encoding': 'identity' };
  headers['user-agent'] ??= 'gantry';
  if (call.contentType) headers['content-type'] = call.contentType;
  for (const [option, header] of Object.entries(provider.optionHeaders ?? {})) {
    const value = optionString(ctx, option);
    if (value) headers[header] = value;
  }
  const body = method === 'GET' || method === 'HEAD' ? undefined : call.body;
  const unsigned: OutgoingRequest = { url: new URL(base + path), method, headers, body };
  let req: OutgoingRequest;
  try {
    req = await provider.authenticate(unsigned, ctx);
  } catch (err) {
    // The passthrough without any provider credential goes with the client's own headers.
    if (call.path === undefined || ctx.apiKey !== undefined || !(err instanceof ValidationError)) throw err;
    req = unsigned;
  }
  const res = await call.send({ ...req, timeoutMs: call.timeoutMs, signal: call.signal });
  if (res.status < 400 || call.path !== undefined) return res;
  const text = (await readCapped(res.body, MAX_ERROR_BYTES)).bytes.toString('utf8');
  return jsonAnswer(res.status, res.headers, provider.transformError(res.status, text, { headers: res.headers }));
}
