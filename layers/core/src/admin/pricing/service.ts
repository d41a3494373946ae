/**
 * Custom model prices: the organisation's own (organisation keys only) and per-workspace overrides
 * (organisation keys for any workspace, workspace keys for their own). Every change drops this
 * process's cached prices of the organisation at once.
 */
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { findModel } from '../../pricing/catalog.ts';
import { CustomPriceRepository, type CustomPriceRecord } from '../../store/custom-prices.ts';
import { findProvider } from '../../providers/registry.ts';
import type { PutPriceBody } from './schema.ts';

export interface CustomPriceView {
  object: 'model-price';
  provider: string;
  model: string;
  /** null: the organisation's price. */
  workspace_id: string | null;
  input_per_million: number | null;
  output_per_million: number | null;
  cached_input_per_million: number | null;
  created_at: string;
  last_updated_at: string;
  last_updated_by: string | null;
}

export interface PriceFields {
  input_per_million: number | null;
  output_per_million: number | null;
  cached_input_per_million: number | null;
}

export interface EffectivePriceView {
  object: 'model-price';
  provider: string;
  model: string;
  workspace_id: string | null;
  /** The price the gateway charges at this level, field by field, and where each field came from. */
  effective: PriceFields & { sources: Record<string, string> };
  /** The custom price stored at exactly this level, if any. */
  custom: CustomPriceView | null;
  /** The built-in catalog entry, if the model is in the catalog. */
  catalog: (PriceFields & { id: string; context_window: number | null; types: string[] }) | null;
}

export function toView(r: CustomPriceRecord): CustomPriceView {
  return {
    object: 'model-price',
    provider: r.provider,
    model: r.model,
    workspace_id: r.workspace_id,
    input_per_million: r.input_per_million ?? null,
    output_per_million: r.output_per_million ?? null,
    cached_input_per_million: r.cached_input_per_million ?? null,
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
    last_updated_by: r.last_updated_by,
  };
}

export class PricingService {
  readonly #deps: CoreDeps;
  readonly #repo: CustomPriceRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new CustomPriceRepository(deps.repos.table);
  }

  /** The level a request names: a workspace (id or slug, from the query or the body), or null. */
  async level(caller: Principal, fromQuery: string | null, fromBody?: string): Promise<string | null> {
    if (fromQuery !== null && fromBody !== undefined && fromQuery !== fromBody) {
      throw ValidationError.field('workspace_id', 'differs between the query string and the body');
    }
    const named = fromQuery ?? fromBody;
    if (named === undefined) return null;
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, named);
    if (!ws) throw new NotFoundError(`Workspace ${named} not found`, { param: 'workspace_id' });
    if (!isOrganisationPrincipal(caller) && !caller.owner && caller.workspaceId !== ws.id) {
      throw new ForbiddenError('Workspace keys may only price models for their own workspace');
    }
    return ws.id;
  }

  static checkProvider(provider: string): string {
    const found = findProvider(provider);
    if (!found) throw ValidationError.field('provider', `unknown provider "${provider}"`);
    return found.id;
  }

  #mayWrite(caller: Principal, workspaceId: string | null): void {
    if (workspaceId === null && !isOrganisationPrincipal(caller) && !caller.owner) {
      throw new ForbiddenError('Only organisation keys may set organisation prices; name your workspace with workspace_id');
    }
  }

  async put(caller: Principal, provider: string, model: string, workspaceId: string | null, body: PutPriceBody): Promise<CustomPriceView> {
    this.#mayWrite(caller, workspaceId);
    const existing = await this.#repo.get(caller.organisationId, workspaceId, provider, model);
    const now = new Date(this.#deps.clock.now()).toISOString();
    const record: CustomPriceRecord = {
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      provider,
      model,
      input_per_million: body.input_per_million ?? null,
      output_per_million: body.output_per_million ?? null,
      cached_input_per_million: body.cached_input_per_million ?? null,
      created_at: existing?.created_at ?? now,
      last_updated_at: now,
      last_updated_by: caller.keyId,
    };
    await this.#repo.put(record);
    this.#deps.pricing.invalidate(caller.organisationId);
    return toView(record);
  }

  async delete(caller: Principal, provider: string, model: string, workspaceId: string | null): Promise<void> {
    this.#mayWrite(caller, workspaceId);
    const deleted = await this.#repo.delete(caller.organisationId, workspaceId, provider, model);
    this.#deps.pricing.invalidate(caller.organisationId);
    if (!deleted) throw new NotFoundError(`No custom price for ${provider}/${model} at this level`);
  }

  async get(caller: Principal, provider: string, model: string, workspaceId: string | null): Promise<EffectivePriceView> {
    const book = this.#deps.pricing;
    book.invalidate(caller.organisationId);
    await book.prefetch(caller.organisationId);
    const effective = book.effectivePrice(caller.organisationId, workspaceId, provider, model);
    const custom = await this.#repo.get(caller.organisationId, workspaceId, provider, model);
    if (!effective && !custom) throw new NotFoundError(`No price for ${provider}/${model}: not in the catalog and no custom price`);
    const catalog = findModel(provider, model);
    return {
      object: 'model-price',
      provider,
      model,
      workspace_id: workspaceId,
      effective: {
        input_per_million: effective?.price.input ?? null,
        output_per_million: effective?.price.output ?? null,
        cached_input_per_million: effective?.price.cachedInput ?? null,
        sources: Object.fromEntries(
          Object.entries(effective?.sources ?? {}).map(([k, v]) => [
            k === 'input' ? 'input_per_million' : k === 'output' ? 'output_per_million' : 'cached_input_per_million',
            v,
          ]),
        ),
      },
      custom: custom ? toView(custom) : null,
      catalog: catalog
        ? {
            id: catalog.id,
            input_per_million: catalog.price.input ?? null,
            output_per_million: catalog.price.output ?? null,
            cached_input_per_million: catalog.price.cachedInput ?? null,
            context_window: catalog.contextWindow ?? null,
            types: catalog.types,
          }
        : null,
    };
  }

  /** Custom prices the caller may see: the organisation's, and its workspaces' (workspace keys: their own). */
  async list(caller: Principal, workspaceId: string | null | undefined, provider: string | undefined): Promise<CustomPriceView[]> {
    const all = await this.#repo.list(caller.organisationId);
    const seesAll = isOrganisationPrincipal(caller) || caller.owner;
    return all
      .filter((r) => seesAll || r.workspace_id === null || r.workspace_id === caller.workspaceId)
      .filter((r) => workspaceId === undefined || r.workspace_id === workspaceId)
      .filter((r) => provider === undefined || r.provider === provider)
      .sort((a, b) => `${a.workspace_id ?? ''}${a.provider}/${a.model}`.localeCompare(`${b.workspace_id ?? ''}${b.provider}/${b.model}`))
      .map(toView);
  }
}
