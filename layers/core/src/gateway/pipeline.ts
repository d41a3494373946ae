/**
 * The gateway pipeline shared by every OpenAI-compatible endpoint: authenticate, parse and validate
 * the body, resolve the config, run the routing engine, relay the answer with the gateway's headers.
 * Errors always come back in OpenAI's shape with the trace id.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../deps.ts';
import { asGantryError, toOpenAIBody, ValidationError, type GantryError } from '../http/errors.ts';
import type { GatewayRecord } from './lifecycle.ts';
import { observeBody } from './observe.ts';
import { jsonResponse, tryParseJson } from '../http/json.ts';
import { readBodyText, type RuntimeBindings } from '../http/bodies.ts';
import type { EndpointType } from '../providers/types.ts';
import { requireGatewayAccess } from './access.ts';
import { bearerKey, createTargetCaller, providerBody } from './call-target.ts';
import { withCache } from './cache/caching-caller.ts';
import { createEmbedder } from './cache/embedder.ts';
import { relay } from './respond.ts';
import { resolveConfig } from './routing/resolve-config.ts';
import { RoutingExecutor } from './routing/execute.ts';
import { parseRequestTimeout } from './headers.ts';

export interface EndpointSpec {
  endpoint: EndpointType;
  /** Validates the parsed body; throws ValidationError naming the field. */
  validate(body: unknown): void;
}

function parseMetadata(headers: Headers): Record<string, unknown> {
  const raw = headers.get('x-gw-metadata');
  if (raw === null) return {};
  const parsed = tryParseJson(raw);
  if (!parsed.ok || parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    throw ValidationError.field('x-gw-metadata', 'must be a JSON object');
  }
  return parsed.value as Record<string, unknown>;
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

export async function handleGatewayRequest(spec: EndpointSpec, req: Request, deps: CoreDeps, bindings?: RuntimeBindings): Promise<Response> {
  const traceId = req.headers.get('x-gw-trace-id') || randomUUID();
  const out: Record<string, string> = { 'x-gw-trace-id': traceId, 'x-gw-cache-status': 'DISABLED' };
  const record: GatewayRecord = {
    id: randomUUID(),
    traceId,
    endpoint: spec.endpoint,
    method: req.method,
    path: new URL(req.url).pathname,
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
    const principal = await deps.keyAuth.authenticate(req.headers.get('x-gw-api-key'));
    record.principal = principal;
    requireGatewayAccess(principal);

    const text = await readBodyText(req);
    const json = tryParseJson(text);
    if (!json.ok) {
      throw new ValidationError([{ path: '', message: 'The request body is not valid JSON' }], { param: null, openaiCode: 'invalid_json' });
    }
    if (json.value !== null && typeof json.value === 'object' && !Array.isArray(json.value)) {
      record.request = json.value as Record<string, unknown>;
      if (typeof record.request.model === 'string') record.model = record.request.model;
      record.stream = record.request.stream === true;
    }
    // The key's default metadata, with the request's own values winning.
    record.metadata = { ...principal.defaults?.metadata, ...parseMetadata(req.headers) };
    spec.validate(json.value);
    const body = json.value as Record<string, unknown>;
    const headerTimeoutMs = parseRequestTimeout(req.headers);
    const { config, fromHeaders, headerProvider } = await resolveConfig(req.headers, principal, deps);

    for (const hook of deps.gatewayHooks) await hook.admit?.(record);

    const callInput = { endpoint: spec.endpoint, bodyText: text, body, clientHeaders: req.headers, headerTimeoutMs, fromHeaders };
    const call = withCache(createTargetCaller(deps, callInput), { cache: deps.responseCache, vectors: deps.vectorIndex, clock: deps.clock, logger: deps.logger }, {
      workspaceId: principal.workspaceId,
      namespace: req.headers.get('x-gw-cache-namespace') ?? undefined,
      forceRefresh: req.headers.get('x-gw-cache-force-refresh')?.toLowerCase() === 'true',
      endpoint: spec.endpoint,
      requestFor: (target) => providerBody(callInput, target),
      embedderFor: (target) =>
        target.cache?.embedding ? createEmbedder(deps, target.cache.embedding, target.api_key ?? bearerKey(req.headers)) : undefined,
    });
    const executor = new RoutingExecutor({ clock: deps.clock, call });
    const outcome = await executor.execute(config, {
      ctx: { metadata: record.metadata, params: body, url: { pathname: record.path } },
      ...(headerProvider ? { base: { provider: headerProvider } } : {}),
      signal: bindings?.clientSignal,
    });
    record.upstreamHeadersAt = deps.clock.now();
    record.targetPath = outcome.target.path;
    record.retries = outcome.retries;
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
    if (outcome.status < 400) {
      observeBody(outcome.body, String(outcome.headers['content-type'] ?? ''), record, deps.clock, () => completeLater(deps, record));
    }
    const response = await relay({ status: outcome.status, headers: outcome.headers, body: outcome.body }, out);
    if (outcome.status >= 400) completeLater(deps, record);
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
