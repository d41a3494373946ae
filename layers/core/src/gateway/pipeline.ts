/**
 * The gateway pipeline shared by every endpoint, the passthrough included: authenticate, read and
 * validate the body as the endpoint takes it, resolve the config, admit, run the routing engine
 * (fallback, retries, timeouts, the cache where the endpoint allows it), relay the answer with the
 * gateway's headers, and fill the request's record. Errors always come back in OpenAI's shape with
 * the trace id.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { CoreDeps } from '../deps.ts';
import { asGantryError, toOpenAIBody, ValidationError, type GantryError } from '../http/errors.ts';
import type { GatewayRecord } from './lifecycle.ts';
import { observeBody, toUsage } from './observe.ts';
import { answeredByFallback, configOrigin } from '../observability/routing-facts.ts';
import { jsonResponse, tryParseJson } from '../http/json.ts';
import { fastBodyOf, type RuntimeBindings } from '../http/bodies.ts';
import { requireGatewayAccess } from './access.ts';
import { bearerKey, createTargetCaller, providerBody, withRequestOptions, type AnthropicInbound, type CallInput } from './call-target.ts';
import { withCache } from './cache/caching-caller.ts';
import { withManagedProviders } from './managed.ts';
import { createEmbedder } from './cache/embedder.ts';
import type { EndpointSpec } from './endpoint.ts';
import { relay, relayRaw, transformJsonAnswer, type ProviderAnswer } from './respond.ts';
import { resolveConfig } from './routing/resolve-config.ts';
import { RoutingExecutor, type TargetCaller } from './routing/execute.ts';
import { parseForwardHeaders, parseOptionHeaders, parseRequestTimeout } from './headers.ts';
import { checkPathParams, checkProxyPath } from './paths.ts';
import { readRequestBody, type ProviderRequestBody } from './request-body.ts';
import { formatUsd } from '../pricing/cost.ts';
import type { EndpointType } from '../providers/types.ts';

type MessagesModule = typeof import('./messages.ts');
let messagesModule: Promise<MessagesModule> | undefined;
/** Anthropic's format (/v1/messages), imported on the first such request. */
const loadMessages = (): Promise<MessagesModule> => (messagesModule ??= import('./messages.ts'));

export type { EndpointSpec } from './endpoint.ts';

/** What the router found in the path. */
export interface RouteMatch {
  /** Path parameters, percent-decoded. */
  params?: Readonly<Record<string, string>>;
  /** The passthrough: the client's path below `/v1`, as encoded, already checked. */
  proxyPath?: string;
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

function parseMetadata(headers: Headers): Record<string, unknown> {
  const raw = headers.get('x-gw-metadata');
  if (raw === null) return {};
  const parsed = tryParseJson(raw);
  if (!parsed.ok || parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    throw ValidationError.field('x-gw-metadata', 'must be a JSON object');
  }
  return parsed.value as Record<string, unknown>;
}

/** A JSON body with SPEC.md's defaults for the fields the client left out; unchanged when none apply. */
function withDefaults(body: ProviderRequestBody, defaults: Readonly<Record<string, unknown>> | undefined): ProviderRequestBody {
  if (!defaults || body.kind !== 'json') return body;
  let value: Record<string, unknown> | undefined;
  for (const [name, fallback] of Object.entries(defaults)) {
    if (body.value[name] === undefined) (value ??= { ...body.value })[name] = fallback;
  }
  return value ? { kind: 'json', text: JSON.stringify(value), value } : body;
}

/** Runs the hooks' `complete` after the response, never failing or delaying it. */
function completeLater(deps: CoreDeps, record: GatewayRecord): void {
  if (deps.gatewayHooks.length === 0) return;
  setImmediate(() => {
    for (const hook of deps.gatewayHooks) {
      try {
        const done = hook.complete?.(record);
        if (done instanceof Promise) done.catch((err: unknown) => deps.logger.error(`${hook.name} failed`, { error: err }));
      } catch (err) {
        deps.logger.error(`${hook.name} failed`, { error: err });
      }
    }
  });
}

const isJson = (contentType: unknown): boolean => typeof contentType === 'string' && /[/+]json\b/i.test(contentType);

/** Endpoints whose non-streamed answers carry token usage: read whole before they are sent, for `x-gw-cost`. */
const PRICED: ReadonlySet<EndpointType> = new Set(['chatComplete', 'complete', 'embed', 'createModelResponse']);
/** Larger answers are relayed as they come, without `x-gw-cost` (the cost is still logged when known). */
const MAX_PRICED_JSON = 4 << 20;

/** The answer read whole, or, past `cap`, a body that replays what was read and then the rest. */
async function readWhole(body: Readable, cap: number): Promise<{ bytes: Buffer } | { rest: Readable }> {
  const it = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const next = await it.next();
    if (next.done) return { bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) };
    chunks.push(next.value);
    size += next.value.length;
    if (size > cap) break;
  }
  async function* replay(): AsyncGenerator<Buffer> {
    try {
      yield* chunks;
      for (;;) {
        const next = await it.next();
        if (next.done) return;
        yield next.value;
      }
    } finally {
      body.destroy();
    }
  }
  return { rest: Readable.from(replay(), { objectMode: false }) };
}

export async function handleGatewayRequest(
  spec: EndpointSpec,
  req: Request,
  deps: CoreDeps,
  bindings?: RuntimeBindings,
  route: RouteMatch = {},
): Promise<Response> {
  // /v1/messages: Anthropic's SDK sends its apiKey as x-api-key (messages.ts).
  const messages = spec.anthropic ? await loadMessages() : undefined;
  const inbound = messages?.inboundHeaders(req.headers);
  const headers = inbound?.headers ?? req.headers;
  const traceId = headers.get('x-gw-trace-id') || randomUUID();
  const out: Record<string, string> = { 'x-gw-trace-id': traceId, 'x-gw-cache-status': 'DISABLED' };
  const url = new URL(req.url);
  const record: GatewayRecord = {
    id: randomUUID(),
    traceId,
    endpoint: spec.endpoint,
    method: req.method,
    path: url.pathname,
    startedAt: deps.clock.now(),
    metadata: {},
    stream: false,
  };
  const spanId = headers.get('x-gw-span-id');
  if (spanId) record.spanId = spanId;
  const parentSpanId = headers.get('x-gw-parent-span-id');
  if (parentSpanId) record.parentSpanId = parentSpanId;
  const spanName = headers.get('x-gw-span-name');
  if (spanName) record.spanName = spanName;

  try {
    const principal = await deps.keyAuth.authenticateRequest(headers, 'gateway');
    record.principal = principal;
    requireGatewayAccess(principal);

    const params = spec.params ? checkPathParams(spec.params, route.params ?? NO_PARAMS) : NO_PARAMS;
    const proxyPath = route.proxyPath === undefined ? undefined : checkProxyPath(route.proxyPath);
    const read = await readRequestBody(spec.body, req, spec.optionalBody);
    if (read.params) {
      record.request = read.params;
      if (typeof read.params.model === 'string') record.model = read.params.model;
      // Multipart fields are text: `stream=true` there.
      record.stream = spec.stream === true && (read.params.stream === true || read.params.stream === 'true');
    }
    // The key's default metadata, with the request's own values winning.
    record.metadata = { ...principal.defaults?.metadata, ...parseMetadata(headers) };
    let body = read.body;
    let anthropic: AnthropicInbound | undefined;
    if (messages && spec.anthropic && body.kind === 'json') {
      const { chat, anthropicOnly } = messages.toChatRequest(spec.anthropic, body.value);
      anthropic = { kind: spec.anthropic, text: body.text, value: body.value, ...(anthropicOnly ? { anthropicOnly } : {}) };
      body = { kind: 'json', text: JSON.stringify(chat), value: chat };
    }
    if (body.kind === 'json') {
      spec.validate?.(body.value);
      body = withDefaults(body, spec.defaults);
      if (body.kind === 'json' && body.value !== read.params) {
        record.request = body.value;
        if (typeof body.value.model === 'string') record.model = body.value.model;
      }
    } else if (read.form) {
      spec.validateForm?.(read.form);
    }
    const headerTimeoutMs = parseRequestTimeout(headers);
    const requested = parseForwardHeaders(headers);
    const forwardHeaders = spec.forwardHeaders ? [...spec.forwardHeaders, ...requested] : requested;
    const { config, fromHeaders, headerProvider } = await resolveConfig(headers, principal, deps);
    Object.assign(record, configOrigin(headers, principal, fromHeaders));

    // Hooks' headers (the limits' `x-ratelimit-*`) go on every answer once all hooks admitted the
    // request; they override a provider's own, as the gateway's limit is the one the client meets.
    const admitted: Record<string, string> = {};
    for (const hook of deps.gatewayHooks) Object.assign(admitted, await hook.admit?.(record));
    Object.assign(out, admitted);

    const callInput: CallInput = {
      endpoint: spec.endpoint,
      method: spec.method,
      body,
      params,
      search: url.search,
      clientHeaders: headers,
      forwardHeaders,
      headerTimeoutMs,
      fromHeaders,
      requestId: record.id,
      providerKey: inbound?.providerKey,
      // Native providers report the usage of every answer, also of streams whose client did not ask for it.
      onUsage: (u) => {
        const usage = toUsage(u.usage);
        if (usage) record.usage = usage;
        if (u.model) record.model = u.model;
      },
    };
    if (anthropic) callInput.anthropic = anthropic;
    if (body.kind === 'raw' && read.params) callInput.fields = read.params;
    if (spec.path !== undefined) callInput.subPath = spec.path;
    else if (proxyPath !== undefined) callInput.subPath = proxyPath;

    let call: TargetCaller = createTargetCaller(deps, callInput);
    if (spec.cacheable) {
      call = withCache(call, { cache: deps.responseCache, vectors: deps.vectorIndex, clock: deps.clock, logger: deps.logger }, {
        workspaceId: principal.workspaceId,
        namespace: headers.get('x-gw-cache-namespace') ?? undefined,
        forceRefresh: headers.get('x-gw-cache-force-refresh')?.toLowerCase() === 'true',
        endpoint: url.search ? spec.endpoint + url.search : spec.endpoint,
        requestFor: (target) => providerBody(callInput, target),
        embedderFor: (target) =>
          target.cache?.embedding ? createEmbedder(deps, target.cache.embedding, target.api_key ?? bearerKey(headers)) : undefined,
      });
    }
    // Header options apply inside the managed wrapper, so they only ever fill non-managed targets.
    call = withRequestOptions(call, parseOptionHeaders(headers));
    call = withManagedProviders(call, deps, principal, {
      clientHeaders: headers,
      params: record.request ?? {},
      budget: (b) => deps.limits.hook.reserveProvider(record, b),
    });
    const executor = new RoutingExecutor({ clock: deps.clock, call });
    const outcome = await executor.execute(config, {
      ctx: { metadata: record.metadata, params: body.kind === 'json' ? body.value : (read.params ?? {}), url: { pathname: record.path } },
      ...(headerProvider ? { base: { provider: headerProvider } } : {}),
      signal: bindings?.clientSignal,
    });
    record.upstreamHeadersAt = deps.clock.now();
    record.targetPath = outcome.target.path;
    record.retries = outcome.retries;
    if (answeredByFallback(config, outcome.target.path)) record.fallback = true;
    if (outcome.target.provider) record.provider = outcome.target.provider;
    if (outcome.cacheStatus) record.cacheStatus = outcome.cacheStatus;

    out['x-gw-last-used-option-index'] = outcome.target.path;
    out['x-gw-retry-attempt-count'] = String(outcome.retries);
    if (outcome.cacheStatus) out['x-gw-cache-status'] = outcome.cacheStatus;
    if (outcome.target.provider) out['x-gw-provider'] = outcome.target.provider;
    if (!outcome.body) {
      const e = outcome.error ?? asGantryError(undefined);
      return refuse(e);
    }
    record.status = outcome.status;
    let answer: ProviderAnswer = { status: outcome.status, headers: outcome.headers, body: outcome.body };
    const contentType = String(answer.headers['content-type'] ?? '');
    if (messages && anthropic) {
      return await messages.respondMessages({
        kind: anthropic.kind,
        answer,
        // Anthropic answers in its own format; count_tokens is Anthropic's (or the gateway's estimate in its shape).
        anthropicShaped: anthropic.kind === 'count_tokens' || messages.isPassThrough(outcome.target),
        requestedModel: typeof anthropic.value.model === 'string' ? anthropic.value.model : '',
        record,
        clock: deps.clock,
        pricing: deps.pricing,
        out,
        done: () => completeLater(deps, record),
      });
    }

    // The passthrough relays every answer as it is, errors included.
    if (spec.endpoint === 'proxy') {
      observeBody(answer.body, contentType, record, deps.clock, () => completeLater(deps, record));
      return relayRaw(answer, out);
    }
    if (spec.transformAnswer && answer.status >= 200 && answer.status < 300 && isJson(contentType)) {
      const transform = spec.transformAnswer;
      const provider = outcome.target.provider;
      answer = await transformJsonAnswer(answer, (json) => transform(json, provider));
    }
    if (answer.status >= 200 && answer.status < 300 && !record.stream && PRICED.has(spec.endpoint) && isJson(contentType)) {
      // Read whole (it is complete anyway) so that its cost can be sent with it.
      const whole = await readWhole(answer.body, MAX_PRICED_JSON);
      if ('bytes' in whole) {
        noteJsonAnswer(record, whole.bytes);
        const micros = deps.pricing.costMicros(record);
        if (micros !== undefined) {
          record.costMicros = micros;
          out['x-gw-cost'] = formatUsd(micros);
        }
        answer = { ...answer, body: Readable.from([whole.bytes]) };
        observeBody(answer.body, contentType, record, deps.clock, () => completeLater(deps, record), { parsed: true });
        return await relay(answer, out);
      }
      answer = { ...answer, body: whole.rest };
    }
    if (answer.status < 400) {
      observeBody(answer.body, contentType, record, deps.clock, () => completeLater(deps, record));
    }
    const response = await relay(answer, out);
    if (answer.status >= 400) {
      // The provider's error, as the client got it, is what the log shows for this request.
      const sent = fastBodyOf(response);
      const parsed = typeof sent === 'string' ? tryParseJson(sent) : undefined;
      if (parsed?.ok) record.response = parsed.value;
      completeLater(deps, record);
    }
    return response;
  } catch (err) {
    const e = asGantryError(err);
    if (e.status >= 500 && e.status !== 502 && e.status !== 503) deps.logger.error('gateway request failed', { traceId, error: err });
    return refuse(e);
  }

  function refuse(e: GantryError): Response {
    record.status = e.status;
    record.errorCode = e.openaiCode ?? e.code;
    record.errorMessage = e.message;
    record.endedAt = deps.clock.now();
    completeLater(deps, record);
    return jsonResponse(messages ? messages.refusalBody(e) : toOpenAIBody(e), e.status, { ...e.headers, ...out });
  }
}

/** Usage, model and body of a JSON answer read whole. */
function noteJsonAnswer(record: GatewayRecord, bytes: Buffer): void {
  const parsed = tryParseJson(bytes.toString('utf8'));
  if (!parsed.ok || parsed.value === null || typeof parsed.value !== 'object') return;
  const value = parsed.value as { usage?: Parameters<typeof toUsage>[0]; model?: unknown };
  record.response = value;
  const usage = toUsage(value.usage);
  if (usage) record.usage = usage;
  if (typeof value.model === 'string' && value.model) record.model = value.model;
}
