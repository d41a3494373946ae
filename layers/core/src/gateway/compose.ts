/**
 * The target caller of one request: the provider call at the centre, and the caller decorators
 * around it, composed here and only here, innermost first. A step that acts on each target (a
 * guardrail on the provider's input, say) joins as one more decorator in this list.
 */
import { createTargetCaller, providerBody, bearerKey, withRequestOptions, type CallInput } from './call-target.ts';
import { withTargetAdmission } from './admission.ts';
import { withCache, type CacheContext, type CachingDeps } from './cache/caching-caller.ts';
import { createEmbedder } from './cache/embedder.ts';
import type { Flight } from './flight.ts';
import { guarding, withGuardrails } from './guard-entry.ts';
import { parseOptionHeaders } from './headers.ts';
import type { Input } from './input.ts';
import { withManagedProviders } from './managed.ts';
import type { TargetCaller } from './routing/execute.ts';
import type { Resolved } from './resolve.ts';
import { noteSentModel, noteUsage, toUsage } from '../kernel/usage.ts';

type Decorator = (inner: TargetCaller) => TargetCaller;

export function buildCaller(f: Flight, input: Input, resolved: Resolved): TargetCaller {
  const call = callInputOf(f, input, resolved);
  const { deps, record, headers } = f;
  const principal = resolved.principal;
  const params = requestParams(f);
  const decorators: Decorator[] = [
    // A dialect answers the targets it serves itself (Anthropic's own format to Anthropic).
    (inner) => (input.dialect ? input.dialect.wrapCaller(inner, call, deps) : inner),
    (inner) => (f.spec.cacheable ? withCache(inner, cachingDeps(f), cacheContext(f, call, principal.workspaceId)) : inner),
    // Header options fill non-managed targets only, so they sit inside the managed wrapper.
    (inner) => withRequestOptions(inner, parseOptionHeaders(headers)),
    // The model each target is sent (after override_params, a managed `@slug/model`) is the one priced.
    (inner) => withSentModel(inner, f),
    // Hooks admit each target as it will be called (a managed provider's budget).
    (inner) => withTargetAdmission(inner, deps.gatewayHooks, record, params),
    (inner) =>
      withManagedProviders(inner, deps, principal, { clientHeaders: headers, params, ...(f.spec.modelField ? { modelField: f.spec.modelField } : {}) }),
    // Guardrail hooks: before anything else (the cache included) is asked, and on what the target answered.
    (inner) => (guarding(f) ? withGuardrails(inner, f, call, principal) : inner),
  ];
  return decorators.reduce<TargetCaller>((inner, decorate) => decorate(inner), createTargetCaller(deps, call));
}

/** The request's fields as targets see them: the model where the endpoint says it is (modelOf). */
function requestParams({ spec, record }: Flight): Readonly<Record<string, unknown>> {
  const request = record.request ?? {};
  return spec.modelOf ? { ...request, model: spec.modelOf(request) } : request;
}

/** Read at call time: a step before the call (a guardrail mutator) may have changed the request. */
function withSentModel(inner: TargetCaller, f: Flight): TargetCaller {
  return (target, signal) => {
    noteSentModel(f.record, target.override_params.model ?? requestParams(f).model);
    return inner(target, signal);
  };
}

function callInputOf(f: Flight, input: Input, resolved: Resolved): CallInput {
  const { spec, record } = f;
  const call: CallInput = {
    endpoint: spec.endpoint,
    method: spec.method,
    body: input.body,
    params: input.params,
    search: f.url.search,
    clientHeaders: f.headers,
    forwardHeaders: resolved.forwardHeaders,
    headerTimeoutMs: resolved.headerTimeoutMs,
    fromHeaders: resolved.fromHeaders,
    requestId: record.id,
    providerKey: f.providerKey,
    // Native providers report the usage of every answer, also of streams whose client did not ask for it.
    onUsage: (u) => noteUsage(record, toUsage(u.usage), u.model),
  };
  if (input.rawFields) call.fields = input.rawFields;
  if (input.subPath !== undefined) call.subPath = input.subPath;
  return call;
}

const cachingDeps = ({ deps }: Flight): CachingDeps => ({ cache: deps.responseCache, vectors: deps.vectorIndex, clock: deps.clock, logger: deps.logger });

function cacheContext(f: Flight, call: CallInput, workspaceId: string): CacheContext {
  const { deps, headers, url, spec } = f;
  return {
    workspaceId,
    namespace: headers.get('x-gw-cache-namespace') ?? undefined,
    forceRefresh: headers.get('x-gw-cache-force-refresh')?.toLowerCase() === 'true',
    endpoint: url.search ? spec.endpoint + url.search : spec.endpoint,
    requestFor: (target) => providerBody(call, target),
    embedderFor: (target) => (target.cache?.embedding ? createEmbedder(deps, target.cache.embedding, target.api_key ?? bearerKey(headers)) : undefined),
  };
}
