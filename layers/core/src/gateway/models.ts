/**
 * `GET /v1/models` and `GET /v1/models/{model}` on the gateway: the built-in catalog in OpenAI's
 * list shape, for the provider the request resolves to (`x-gw-provider`, else the first target of
 * `x-gw-config` or the key's default config), or for every provider when none is named. A managed
 * provider (`@slug`) lists its own models (managed-models.ts).
 * Authenticated like every gateway route; prices are the caller's effective ones.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../deps.ts';
import { asGantryError, NotFoundError, ValidationError } from '../http/errors.ts';
import { toResponse } from '../http/error-response.ts';
import { jsonResponse } from '../http/json.ts';
import type { Principal } from '../kernel/principal.ts';
import { CATALOG_CREATED, catalogModels, findModel, type CatalogModel } from '../pricing/catalog.ts';
import { findProvider, providerIds } from '../providers/registry.ts';
import { requireGatewayAccess } from './access.ts';
import { gatewayKeyFromBearer } from './headers.ts';
import { managedModels } from './managed-models.ts';
import { resolveConfig } from './routing/resolve-config.ts';
import type { ConfigNode } from '../kernel/routing.ts';

export interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  provider: string;
  endpoint_types: string[];
  context_window: number | null;
  /** USD per million tokens, as this caller is charged; null when not published. */
  pricing: { input_per_million: number | null; output_per_million: number | null; cached_input_per_million: number | null; currency: 'USD' };
}

function firstProvider(node: ConfigNode | undefined): string | undefined {
  if (!node) return undefined;
  if (typeof node.provider === 'string' && node.provider) return node.provider;
  return firstProvider(node.targets?.[0]);
}

/**
 * The provider a models request is about (`x-gw-provider`, else the config's first target), as
 * written and with the header or config that named it; undefined for all of them.
 */
async function requestedProvider(headers: Headers, principal: Principal, deps: CoreDeps): Promise<{ id: string; field: string } | undefined> {
  const header = headers.get('x-gw-provider')?.trim();
  if (header) return { id: header, field: 'x-gw-provider' };
  if (!headers.get('x-gw-config') && !principal.defaults?.config_id) return undefined;
  const { config } = await resolveConfig(headers, principal, deps);
  const id = firstProvider(config);
  return id ? { id, field: 'x-gw-config' } : undefined;
}

/** The models listed for the request: the catalog's (of one provider or all), or a managed provider's. */
async function modelsFor(headers: Headers, principal: Principal, deps: CoreDeps): Promise<{ provider?: string; models: CatalogModel[] }> {
  const requested = await requestedProvider(headers, principal, deps);
  if (!requested) return { models: [...catalogModels()] };
  if (requested.id.startsWith('@')) {
    const managed = await managedModels(deps, principal, requested.id, requested.field);
    return { provider: managed.provider, models: managed.ids.map((id) => findModel(managed.provider, id) ?? unlisted(managed.provider, id)) };
  }
  const provider = findProvider(requested.id);
  if (!provider) throw ValidationError.field(requested.field, `unknown provider "${requested.id}"; known: ${providerIds().join(', ')}`);
  return { provider: provider.id, models: [...catalogModels(provider.id)] };
}

/** A model the provider lists that the catalog does not know: no type, window or catalog price. */
const unlisted = (provider: string, id: string): CatalogModel => ({ id, provider, types: [], price: {} });

function toObject(m: CatalogModel, principal: Principal, deps: CoreDeps): ModelObject {
  const price = deps.pricing.effectivePrice(principal.organisationId, principal.workspaceId, m.provider, m.id)?.price ?? m.price;
  return {
    id: m.id,
    object: 'model',
    created: CATALOG_CREATED,
    owned_by: m.provider,
    provider: m.provider,
    endpoint_types: m.types,
    context_window: m.contextWindow ?? null,
    pricing: {
      input_per_million: price.input ?? null,
      output_per_million: price.output ?? null,
      cached_input_per_million: price.cachedInput ?? null,
      currency: 'USD',
    },
  };
}

async function handle(req: Request, deps: CoreDeps, model: string | undefined): Promise<Response> {
  const headers = gatewayKeyFromBearer(req.headers);
  const traceId = headers.get('x-gw-trace-id') || randomUUID();
  const out: Record<string, string> = { 'x-gw-trace-id': traceId };
  try {
    const principal = await deps.keyAuth.authenticateRequest(headers, 'gateway');
    requireGatewayAccess(principal);
    const { provider, models } = await modelsFor(headers, principal, deps);
    if (provider) out['x-gw-provider'] = provider;
    await deps.pricing.prefetch(principal.organisationId);
    if (model === undefined) {
      const data = models.map((m) => toObject(m, principal, deps));
      return jsonResponse({ object: 'list', data }, 200, out);
    }
    const found = models.find((m) => m.id === model) ?? (provider ? findModel(provider, model) : undefined);
    if (!found)
      throw new NotFoundError(`The model ${model} is not in the catalog${provider ? ` of provider ${provider}` : ''}`, {
        param: 'model',
        openaiCode: 'model_not_found',
      });
    return jsonResponse(toObject(found, principal, deps), 200, out);
  } catch (err) {
    const e = asGantryError(err);
    if (e.status >= 500) deps.logger.error('models request failed', { traceId, error: err });
    return toResponse(e, 'gateway', out);
  }
}

export const listModels = (req: Request, deps: CoreDeps): Promise<Response> => handle(req, deps, undefined);

export const retrieveModel = (req: Request, deps: CoreDeps, model: string): Promise<Response> => handle(req, deps, model);
