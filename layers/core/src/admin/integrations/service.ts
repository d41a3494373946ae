/**
 * Integration rules: organisation-level provider credentials. The key (and any secret
 * configuration field) is encrypted before it reaches the table and is only ever shown masked.
 * Workspace keys cannot manage integrations: the scopes are organisation-only (see scopes.ts).
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { findProvider } from '../../providers/registry.ts';
import type { ProviderDefinition } from '../../providers/types.ts';
import { Workspace } from '../../store/entities.ts';
import { IntegrationRepository, ProviderRepository, type IntegrationRecord, type ProviderRecord } from '../../store/integrations.ts';
import { createWithSlug, maskAll, maskSecret, slugFrom } from './common.ts';
import { integrationContext, openCredentials, sealCredentials, type Credentials } from '../../store/credentials.ts';
import { validateConfigurations } from './configurations.ts';
import type { CreateIntegrationBody, UpdateIntegrationBody } from './schema.ts';
import { checkMappings, dropPlaceholders, withMappedFields } from '../secret-references/mappings.ts';
import type { SecretMapping } from '../../ports/secret-managers.ts';
import { prefixRange } from '../../store/prefix-range.ts';

/** A transaction holds 100 items; the integration takes three of them. */
export const MAX_DEFAULT_PROVIDERS = 97;

export interface IntegrationView {
  object: 'integration';
  id: string;
  slug: string;
  name: string;
  description: string | null;
  organisation_id: string;
  ai_provider_id: string;
  status: string;
  /** The key is never returned; this shows enough to recognise it. */
  masked_key: string | null;
  /** Plain fields as stored; secret ones only as `masked_<field>`. */
  configurations: Record<string, unknown>;
  tags: Record<string, string>;
  /** null: every workspace may use the integration. */
  workspace_ids: string[] | null;
  allowed_models: string[];
  /** Fields resolved from secret references at request time. */
  secret_mappings: SecretMapping[];
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export function toView(r: IntegrationRecord): IntegrationView {
  const masked = Object.fromEntries(Object.entries(r.masked_configurations).map(([k, v]) => [`masked_${k}`, v]));
  return {
    object: 'integration',
    id: r.id,
    slug: r.slug,
    name: r.name,
    description: r.description,
    organisation_id: r.organisation_id,
    ai_provider_id: r.ai_provider_id,
    status: r.status,
    masked_key: r.masked_key,
    configurations: { ...r.configurations, ...masked },
    tags: r.tags,
    workspace_ids: r.workspace_ids,
    allowed_models: r.allowed_models,
    secret_mappings: r.secret_mappings ?? [],
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
    created_by: r.created_by,
    last_updated_by: r.last_updated_by,
  };
}

export interface IntegrationFilter {
  /** Only integrations this workspace (id or slug) may use. */
  workspace?: string | undefined;
  ai_provider_id?: string | undefined;
  status?: string | undefined;
  /** Every pair must match. */
  tags?: Record<string, string>;
  /** Integrations here are organisation-level: `workspace` lists none. */
  type?: 'all' | 'organisation' | 'workspace';
}

export class IntegrationService {
  readonly #deps: CoreDeps;
  readonly #repo: IntegrationRepository;
  readonly #providers: ProviderRepository;

  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new IntegrationRepository(deps.repos.table);
    this.#providers = new ProviderRepository(deps.repos.table);
  }

  #requireOrganisation(caller: Principal): void {
    if (!isOrganisationPrincipal(caller)) throw new ForbiddenError('Integrations are managed with organisation keys');
  }

  #provider(id: string, problems: FieldProblem[]): ProviderDefinition | undefined {
    const provider = findProvider(id);
    if (!provider) problems.push({ path: 'ai_provider_id', message: `unknown provider "${id}"` });
    return provider;
  }

  /** Workspace ids or slugs to ids; unknown ones are problems naming their index. */
  async #workspaceIds(caller: Principal, requested: string[] | null | undefined, problems: FieldProblem[]): Promise<string[] | null | undefined> {
    if (requested === undefined || requested === null) return requested;
    const ids: string[] = [];
    for (const [i, w] of requested.entries()) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, w);
      if (!ws) problems.push({ path: `workspace_ids[${i}]`, message: `no workspace "${w}" in this organisation` });
      else if (!ids.includes(ws.id)) ids.push(ws.id);
    }
    return ids;
  }

  async #activeWorkspaces(orgId: string): Promise<string[]> {
    const all = await this.#deps.repos.table.queryAll(Workspace, {
      ...prefixRange(`ORG#${orgId}`, 'WS#'),
      ConsistentRead: true,
    });
    return all.filter((w) => w.status === 'active').map((w) => w.id);
  }

  async create(caller: Principal, body: CreateIntegrationBody): Promise<{ id: string; slug: string; object: 'integration' }> {
    this.#requireOrganisation(caller);
    const problems: FieldProblem[] = [];
    const provider = this.#provider(body.ai_provider_id, problems);
    const workspaceIds = await this.#workspaceIds(caller, body.workspace_ids, problems);
    const createDefault = body.create_default_provider ?? body.default_provider_slug !== undefined;
    if (body.create_default_provider === false && body.default_provider_slug !== undefined) {
      problems.push({ path: 'default_provider_slug', message: 'is only allowed with create_default_provider true' });
    }
    const mappings = await checkMappings(this.#deps, caller.organisationId, provider, body.secret_mappings ?? [], problems);
    let split = { plain: {}, secret: {} } as ReturnType<typeof validateConfigurations>;
    if (provider) {
      try {
        split = dropPlaceholders(validateConfigurations(provider, withMappedFields(body.configurations, body.secret_mappings ?? []), this.#deps.trustedHosts));
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        problems.push(...err.problems);
      }
    } else if (body.configurations) {
      problems.push({ path: 'configurations', message: 'cannot be checked without a known ai_provider_id' });
    }
    if (problems.length) throw new ValidationError(problems);

    const workspacesForDefault = createDefault ? (workspaceIds ?? (await this.#activeWorkspaces(caller.organisationId))) : [];
    if (workspacesForDefault.length > MAX_DEFAULT_PROVIDERS) {
      throw ValidationError.field(
        'create_default_provider',
        `can create default providers in at most ${MAX_DEFAULT_PROVIDERS} workspaces at once (${workspacesForDefault.length} allowed); name fewer in workspace_ids`,
      );
    }

    const id = randomUUID();
    const now = new Date(this.#deps.clock.now()).toISOString();
    const secret = await sealCredentials(this.#deps.cipher, integrationContext(caller.organisationId, id), {
      ...(body.key !== undefined ? { key: body.key } : {}),
      config: split.secret,
    });
    const base: Omit<IntegrationRecord, 'slug'> = {
      id,
      organisation_id: caller.organisationId,
      name: body.name,
      description: body.description ?? null,
      ai_provider_id: (provider as ProviderDefinition).id,
      status: 'active',
      secret,
      masked_key: body.key !== undefined ? maskSecret(body.key) : null,
      configurations: split.plain,
      masked_configurations: maskAll(split.secret),
      tags: body.tags ?? {},
      workspace_ids: workspaceIds ?? null,
      allowed_models: [...new Set(body.allowed_models ?? [])],
      ...(mappings.length ? { secret_mappings: mappings } : {}),
      created_at: now,
      last_updated_at: now,
      created_by: caller.keyId,
      last_updated_by: caller.keyId,
    };
    const rec = await createWithSlug(body.slug ?? slugFrom(body.name, 'integration'), body.slug === undefined, async (slug) => {
      const rec: IntegrationRecord = { ...base, slug };
      const providers: ProviderRecord[] = workspacesForDefault.map((workspaceId) => ({
        id: randomUUID(),
        organisation_id: caller.organisationId,
        workspace_id: workspaceId,
        slug: body.default_provider_slug ?? slug,
        name: body.name,
        integration_id: id,
        note: null,
        expires_at: null,
        created_at: now,
        last_updated_at: now,
        created_by: caller.keyId,
        last_updated_by: caller.keyId,
      }));
      await this.#repo.create(rec, providers);
      return rec;
    });
    this.#deps.managedProviders.invalidate();
    return { id, slug: rec.slug, object: 'integration' };
  }

  /** By id or slug; 404 when there is none in the caller's organisation. */
  async get(caller: Principal, idOrSlug: string): Promise<IntegrationRecord> {
    this.#requireOrganisation(caller);
    const rec = await this.#repo.resolve(caller.organisationId, idOrSlug);
    if (!rec) throw new NotFoundError(`Integration ${idOrSlug} not found`);
    return rec;
  }

  async list(caller: Principal, filter: IntegrationFilter): Promise<IntegrationRecord[]> {
    this.#requireOrganisation(caller);
    if (filter.type === 'workspace') return [];
    let workspaceId: string | undefined;
    if (filter.workspace !== undefined) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, filter.workspace);
      if (!ws) throw new NotFoundError(`Workspace ${filter.workspace} not found`, { param: 'workspace_id' });
      workspaceId = ws.id;
    }
    const tags = Object.entries(filter.tags ?? {});
    return (await this.#repo.list(caller.organisationId)).filter(
      (r) =>
        (workspaceId === undefined || r.workspace_ids === null || r.workspace_ids.includes(workspaceId)) &&
        (filter.ai_provider_id === undefined || r.ai_provider_id === filter.ai_provider_id) &&
        (filter.status === undefined || r.status === filter.status) &&
        tags.every(([k, v]) => r.tags[k] === v),
    );
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateIntegrationBody): Promise<void> {
    const current = await this.get(caller, idOrSlug);
    const problems: FieldProblem[] = [];
    const provider = this.#provider(current.ai_provider_id, problems);
    const workspaceIds = await this.#workspaceIds(caller, body.workspace_ids, problems);
    const context = integrationContext(current.organisation_id, current.id);

    let creds: Credentials | undefined;
    const credentials = async () => (creds ??= await openCredentials(this.#deps.cipher, current.secret, context));
    const mappingBodies = body.secret_mappings ?? current.secret_mappings ?? [];
    const mappings = body.secret_mappings ? await checkMappings(this.#deps, current.organisation_id, provider, body.secret_mappings, problems) : undefined;
    let split: ReturnType<typeof validateConfigurations> | undefined;
    if (body.configurations !== undefined && provider) {
      try {
        const raw = withMappedFields(body.configurations, mappingBodies);
        split = dropPlaceholders(validateConfigurations(provider, raw, this.#deps.trustedHosts, { previousSecret: (await credentials()).config }));
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        problems.push(...err.problems);
      }
    }
    if (problems.length) throw new ValidationError(problems);

    const next: IntegrationRecord = {
      ...current,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description ?? null } : {}),
      ...(body.tags !== undefined ? { tags: body.tags } : {}),
      ...(workspaceIds !== undefined ? { workspace_ids: workspaceIds } : {}),
      ...(body.allowed_models !== undefined ? { allowed_models: [...new Set(body.allowed_models)] } : {}),
      ...(body.status !== undefined ? { status: body.status } : {}),
      ...(mappings !== undefined ? { secret_mappings: mappings } : {}),
      last_updated_at: new Date(this.#deps.clock.now()).toISOString(),
      last_updated_by: caller.keyId,
    };
    if (body.key !== undefined || split) {
      const old = await credentials();
      const key = body.key === undefined ? old.key : (body.key ?? undefined);
      const secretConfig = split ? split.secret : old.config;
      next.secret = await sealCredentials(this.#deps.cipher, context, { ...(key !== undefined ? { key } : {}), config: secretConfig });
      next.masked_key = key !== undefined ? maskSecret(key) : null;
      next.masked_configurations = maskAll(secretConfig);
      if (split) next.configurations = split.plain;
    }
    await this.#repo.update(next);
    this.#deps.managedProviders.invalidate();
  }

  /** Refused (AB07) while any provider uses the integration. */
  async delete(caller: Principal, idOrSlug: string): Promise<void> {
    const rec = await this.get(caller, idOrSlug);
    const count = await this.#repo.providerCount(rec.organisation_id, rec.id);
    if (count > 0) {
      const some = await this.#providers.byIntegration(rec.id, 10);
      const names = some.map((p) => `@${p.slug} (workspace ${p.workspace_id})`).join(', ');
      throw new ConflictError(`Integration ${rec.slug} is used by ${count} provider(s)${names ? `: ${names}` : ''}; delete them first`);
    }
    await this.#repo.delete(rec);
    this.#deps.managedProviders.invalidate();
  }
}
