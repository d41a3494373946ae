/**
 * Virtual key rules (legacy; providers with `@slug` replace them, and both keep working). A virtual
 * key holds a provider credential for one workspace; the key is encrypted before it reaches the
 * table and only ever shown masked.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { findProvider } from '../../providers/registry.ts';
import type { ProviderDefinition } from '../../providers/types.ts';
import { VirtualKeyRepository, type VirtualKeyRecord } from '../../store/virtual-keys.ts';
import { createWithSlug, findInWorkspace, isPast, listWorkspace, maskAll, maskSecret, slugFrom, workspaceFor } from '../integrations/common.ts';
import { openCredentials, sealCredentials, virtualKeyContext } from '../../store/credentials.ts';
import { validateConfigurations, type SplitConfiguration } from '../integrations/configurations.ts';
import type { CreateVirtualKeyBody, UpdateVirtualKeyBody } from './schema.ts';

export interface VirtualKeyView {
  object: 'virtual-key';
  id: string;
  slug: string;
  name: string;
  provider: string;
  organisation_id: string;
  workspace_id: string;
  note: string | null;
  status: 'active' | 'expired';
  /** The key is never returned. */
  masked_key: string | null;
  /** The configuration; secret fields only as `masked_<field>`. */
  model_config: Record<string, unknown>;
  expires_at: string | null;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export function toView(r: VirtualKeyRecord, nowMs: number): VirtualKeyView {
  const masked = Object.fromEntries(Object.entries(r.masked_configurations).map(([k, v]) => [`masked_${k}`, v]));
  return {
    object: 'virtual-key',
    id: r.id,
    slug: r.slug,
    name: r.name,
    provider: r.provider,
    organisation_id: r.organisation_id,
    workspace_id: r.workspace_id,
    note: r.note,
    status: isPast(r.expires_at, nowMs) ? 'expired' : 'active',
    masked_key: r.masked_key,
    model_config: { ...r.configurations, ...masked },
    expires_at: r.expires_at,
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
    created_by: r.created_by,
    last_updated_by: r.last_updated_by,
  };
}

type LegacyFields = Partial<Pick<CreateVirtualKeyBody, 'apiVersion' | 'resourceName' | 'deploymentName' | 'deploymentConfig'>>;

/** The reference spec's camelCase Azure fields, as configuration fields. */
export function legacyConfigurations(provider: ProviderDefinition, body: LegacyFields, problems: FieldProblem[]): Record<string, unknown> {
  const sent = (['apiVersion', 'resourceName', 'deploymentName', 'deploymentConfig'] as const).filter((k) => body[k] !== undefined && body[k] !== null);
  if (sent.length === 0) return {};
  if (provider.id !== 'azure-openai') {
    for (const k of sent) problems.push({ path: k, message: 'is only for provider azure-openai' });
    return {};
  }
  const out: Record<string, unknown> = {};
  if (body.resourceName) out.azure_resource_name = body.resourceName;
  if (body.deploymentConfig) {
    out.azure_deployment_config = body.deploymentConfig.map((d) => ({
      azure_api_version: d.apiVersion,
      azure_deployment_name: d.deploymentName,
      azure_model_slug: d.alias ?? d.deploymentName,
      ...(d.alias !== undefined ? { alias: d.alias } : {}),
      ...(d.is_default !== undefined ? { is_default: d.is_default } : {}),
    }));
  } else if (body.deploymentName) {
    if (!body.apiVersion) problems.push({ path: 'apiVersion', message: 'is required with deploymentName' });
    else {
      out.azure_deployment_config = [
        { azure_api_version: body.apiVersion, azure_deployment_name: body.deploymentName, azure_model_slug: body.deploymentName, is_default: true },
      ];
    }
  } else if (body.apiVersion) {
    problems.push({ path: 'apiVersion', message: 'is only used with deploymentName or deploymentConfig' });
  }
  return out;
}

export class VirtualKeyService {
  readonly #deps: CoreDeps;
  readonly #repo: VirtualKeyRepository;

  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new VirtualKeyRepository(deps.repos.table);
  }

  /**
   * The configuration from `configurations` and the legacy fields (explicit configurations win);
   * `base` is what an update starts from when it sends no `configurations`.
   */
  #configure(
    provider: ProviderDefinition,
    body: LegacyFields & { configurations?: Record<string, unknown> | undefined },
    problems: FieldProblem[],
    base: Record<string, unknown> = {},
    previousSecret?: Record<string, unknown>,
  ): SplitConfiguration | undefined {
    const legacy = legacyConfigurations(provider, body, problems);
    const merged = body.configurations !== undefined ? { ...legacy, ...body.configurations } : { ...base, ...legacy };
    try {
      return validateConfigurations(provider, merged, this.#deps.trustedHosts, previousSecret ? { previousSecret } : {});
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  }

  async create(caller: Principal, body: CreateVirtualKeyBody): Promise<{ id: string; slug: string; object: 'virtual-key' }> {
    const problems: FieldProblem[] = [];
    const now = this.#deps.clock.now();
    const provider = findProvider(body.provider);
    if (!provider) problems.push({ path: 'provider', message: `unknown provider "${body.provider}"` });
    if (isPast(body.expires_at ?? null, now)) problems.push({ path: 'expires_at', message: 'must be in the future' });
    const split = provider ? this.#configure(provider, body, problems) : undefined;
    if (problems.length) throw new ValidationError(problems);
    const workspaceId = await workspaceFor(this.#deps, caller, body.workspace_id, 'virtual keys');
    const configured = split as SplitConfiguration;

    const id = randomUUID();
    const at = new Date(now).toISOString();
    const secret = await sealCredentials(this.#deps.cipher, virtualKeyContext(caller.organisationId, id), {
      ...(body.key !== undefined ? { key: body.key } : {}),
      config: configured.secret,
    });
    // Generated slugs carry a suffix from the start: a name is often reused for several keys.
    const generated = body.slug === undefined;
    const first = body.slug ?? slugFrom(body.name, 'virtual-key');
    const rec = await createWithSlug(first, generated, async (slug) => {
      const rec: VirtualKeyRecord = {
        id,
        organisation_id: caller.organisationId,
        workspace_id: workspaceId,
        slug,
        name: body.name,
        provider: (provider as ProviderDefinition).id,
        note: body.note ?? null,
        secret,
        masked_key: body.key !== undefined ? maskSecret(body.key) : null,
        configurations: configured.plain,
        masked_configurations: maskAll(configured.secret),
        expires_at: body.expires_at ?? null,
        created_at: at,
        last_updated_at: at,
        created_by: caller.keyId,
        last_updated_by: caller.keyId,
      };
      await this.#repo.create(rec);
      return rec;
    });
    this.#deps.managedProviders.invalidate();
    return { id, slug: rec.slug, object: 'virtual-key' };
  }

  /** By slug or id, as for providers; 404 when the caller cannot see it. */
  async get(caller: Principal, slugOrId: string, workspace: string | null): Promise<VirtualKeyRecord> {
    return findInWorkspace(this.#deps, this.#repo, caller, slugOrId, workspace, { one: 'virtual key', many: 'virtual keys' });
  }

  async list(caller: Principal, workspace: string | null): Promise<VirtualKeyRecord[]> {
    return this.#repo.list(caller.organisationId, await listWorkspace(this.#deps, caller, workspace, 'virtual keys'));
  }

  async update(caller: Principal, slugOrId: string, workspace: string | null, body: UpdateVirtualKeyBody): Promise<void> {
    const current = await this.get(caller, slugOrId, workspace);
    const now = this.#deps.clock.now();
    const problems: FieldProblem[] = [];
    if (body.expires_at && isPast(body.expires_at, now)) problems.push({ path: 'expires_at', message: 'must be in the future' });
    const provider = findProvider(current.provider);
    if (!provider) problems.push({ path: 'provider', message: `provider "${current.provider}" is no longer known` });
    const context = virtualKeyContext(current.organisation_id, current.id);
    const reconfigure = body.configurations !== undefined || body.deploymentConfig !== undefined;
    const old = reconfigure || body.key !== undefined ? await openCredentials(this.#deps.cipher, current.secret, context) : undefined;
    const split = reconfigure && provider ? this.#configure(provider, body, problems, current.configurations, old?.config) : undefined;
    if (problems.length) throw new ValidationError(problems);

    const next: VirtualKeyRecord = {
      ...current,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.note !== undefined ? { note: body.note ?? null } : {}),
      ...(body.expires_at !== undefined ? { expires_at: body.expires_at ?? null } : {}),
      last_updated_at: new Date(now).toISOString(),
      last_updated_by: caller.keyId,
    };
    if (old) {
      const key = body.key ?? old.key;
      const secretConfig = split ? split.secret : old.config;
      next.secret = await sealCredentials(this.#deps.cipher, context, { ...(key !== undefined ? { key } : {}), config: secretConfig });
      next.masked_key = key !== undefined ? maskSecret(key) : null;
      next.masked_configurations = maskAll(secretConfig);
      if (split) next.configurations = split.plain;
    }
    await this.#repo.update(next);
    this.#deps.managedProviders.invalidate();
  }

  async delete(caller: Principal, slugOrId: string, workspace: string | null): Promise<void> {
    await this.#repo.delete(await this.get(caller, slugOrId, workspace));
    this.#deps.managedProviders.invalidate();
  }
}
