/**
 * The gateway pipeline shared by every OpenAI-compatible endpoint: authenticate, parse and validate
 * the body, resolve the config, run the routing engine, relay the answer with the gateway's headers.
 * Errors always come back in OpenAI's shape with the trace id.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../deps.ts';
import { asGantryError, toOpenAIBody, ValidationError } from '../http/errors.ts';
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

export async function handleGatewayRequest(spec: EndpointSpec, req: Request, deps: CoreDeps, bindings?: RuntimeBindings): Promise<Response> {
  const traceId = req.headers.get('x-gw-trace-id') || randomUUID();
  const out: Record<string, string> = { 'x-gw-trace-id': traceId, 'x-gw-cache-status': 'DISABLED' };
  try {
    const principal = await deps.keyAuth.authenticate(req.headers.get('x-gw-api-key'));
    requireGatewayAccess(principal);

    const text = await readBodyText(req);
    const json = tryParseJson(text);
    if (!json.ok) {
      throw new ValidationError([{ path: '', message: 'The request body is not valid JSON' }], { param: null, openaiCode: 'invalid_json' });
    }
    spec.validate(json.value);
    const body = json.value as Record<string, unknown>;
    // The key's default metadata, with the request's own values winning.
    const metadata = { ...principal.defaults?.metadata, ...parseMetadata(req.headers) };
    const headerTimeoutMs = parseRequestTimeout(req.headers);
    const { config, fromHeaders, headerProvider } = await resolveConfig(req.headers, principal, deps);

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
      ctx: { metadata, params: body, url: { pathname: new URL(req.url).pathname } },
      ...(headerProvider ? { base: { provider: headerProvider } } : {}),
      signal: bindings?.clientSignal,
    });

    out['x-gw-last-used-option-index'] = outcome.target.path;
    out['x-gw-retry-attempt-count'] = String(outcome.retries);
    if (outcome.cacheStatus) out['x-gw-cache-status'] = outcome.cacheStatus;
    if (outcome.target.provider) out['x-gw-provider'] = outcome.target.provider;
    if (!outcome.body) {
      const e = outcome.error ?? asGantryError(undefined);
      return jsonResponse(toOpenAIBody(e), e.status, { ...e.headers, ...out });
    }
    return await relay({ status: outcome.status, headers: outcome.headers, body: outcome.body }, out);
  } catch (err) {
    const e = asGantryError(err);
    if (e.status >= 500 && e.status !== 502 && e.status !== 503) deps.logger.error('gateway request failed', { traceId, error: err });
    return jsonResponse(toOpenAIBody(e), e.status, { ...e.headers, ...out });
  }
}
