/**
 * The gateway pipeline shared by every endpoint, the passthrough included: authenticate, read and
 * validate the body as the endpoint takes it, resolve the config, admit, run the routing engine
 * (fallback, retries, timeouts, the cache where the endpoint allows it), relay the answer with the
 * gateway's headers, and fill the request's record. Errors always come back in OpenAI's shape with
 * the trace id.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../deps.ts';
import { asGantryError, toOpenAIBody, ValidationError, type GantryError } from '../http/errors.ts';
import type { GatewayRecord } from './lifecycle.ts';
import { observeBody } from './observe.ts';
import { answeredByFallback, configOrigin } from '../observability/routing-facts.ts';
import { jsonResponse, tryParseJson } from '../http/json.ts';
import type { RuntimeBindings } from '../http/bodies.ts';
import { requireGatewayAccess } from './access.ts';
import { bearerKey, createTargetCaller, providerBody, withRequestOptions, type CallInput } from './call-target.ts';
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

export async function handleGatewayRequest(
  spec: EndpointSpec,
  req: Request,
  deps: CoreDeps,
  bindings?: RuntimeBindings,
  route: RouteMatch = {},
): Promise<Response> {
  const traceId = req.headers.get('x-gw-trace-id') || randomUUID();
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
  const spanId = req.headers.get('x-gw-span-id');
  if (spanId) record.spanId = spanId;
  const parentSpanId = req.headers.get('x-gw-parent-span-id');
  if (parentSpanId) record.parentSpanId = parentSpanId;
  const spanName = req.headers.get('x-gw-span-name');
  if (spanName) record.spanName = spanName;

  try {
    const principal = await deps.keyAuth.authenticateRequest(req.headers, 'gateway');
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
    record.metadata = { ...principal.defaults?.metadata, ...parseMetadata(req.headers) };
    let body = read.body;
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
    const headerTimeoutMs = parseRequestTimeout(req.headers);
    const requested = parseForwardHeaders(req.headers);
    const forwardHeaders = spec.forwardHeaders ? [...spec.forwardHeaders, ...requested] : requested;
    const { config, fromHeaders, headerProvider } = await resolveConfig(req.headers, principal, deps);
    Object.assign(record, configOrigin(req.headers, principal, fromHeaders));

    for (const hook of deps.gatewayHooks) await hook.admit?.(record);

    const callInput: CallInput = {
      endpoint: spec.endpoint,
      method: spec.method,
      body,
      params,
      search: url.search,
      clientHeaders: req.headers,
      forwardHeaders,
      headerTimeoutMs,
      fromHeaders,
    };
    if (spec.path !== undefined) callInput.subPath = spec.path;
    else if (proxyPath !== undefined) callInput.subPath = proxyPath;

    let call: TargetCaller = createTargetCaller(deps, callInput);
    if (spec.cacheable) {
      call = withCache(call, { cache: deps.responseCache, vectors: deps.vectorIndex, clock: deps.clock, logger: deps.logger }, {
        workspaceId: principal.workspaceId,
        namespace: req.headers.get('x-gw-cache-namespace') ?? undefined,
        forceRefresh: req.headers.get('x-gw-cache-force-refresh')?.toLowerCase() === 'true',
        endpoint: url.search ? spec.endpoint + url.search : spec.endpoint,
        requestFor: (target) => providerBody(callInput, target),
        embedderFor: (target) =>
          target.cache?.embedding ? createEmbedder(deps, target.cache.embedding, target.api_key ?? bearerKey(req.headers)) : undefined,
      });
    }
    // Header options apply inside the managed wrapper, so they only ever fill non-managed targets.
    call = withRequestOptions(call, parseOptionHeaders(req.headers));
    call = withManagedProviders(call, deps, principal, { clientHeaders: req.headers, params: record.request ?? {} });
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
    if (answer.status < 400) {
      observeBody(answer.body, contentType, record, deps.clock, () => completeLater(deps, record));
    }
    const response = await relay(answer, out);
    if (answer.status >= 400) completeLater(deps, record);
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
    return jsonResponse(toOpenAIBody(e), e.status, { ...e.headers, ...out });
  }
}
