/**
 * Provider rules: a workspace's handle on an integration, used at the gateway as `@slug`. The slug
 * is unique in its workspace; the integration must allow the workspace. Providers replace the
 * legacy virtual keys.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { IntegrationRepository, ProviderRepository, type IntegrationRecord, type ProviderRecord } from '../../store/integrations.ts';
import { createWithSlug, findInWorkspace, isPast, listWorkspace, slugFrom, workspaceFor } from '../integrations/common.ts';
import type { KeyUsageLimits } from '../../store/entities.ts';
import type { CreateProviderBody, UpdateProviderBody } from './schema.ts';

type UsageLimitsBody = NonNullable<CreateProviderBody['usage_limits']>;

/**
 * A provider's budget as stored. Its periods follow calendar boundaries (as a workspace's do), so
 * `next_usage_reset_at` has no meaning here; a budget without a credit limit is no budget.
 */
function providerUsageLimits(u: UsageLimitsBody | null | undefined, problems: FieldProblem[]): KeyUsageLimits | null {
  if (!u) return null;
  if (u.credit_limit == null) problems.push({ path: 'usage_limits.credit_limit', message: 'is required' });
  if (u.next_usage_reset_at != null) {
    problems.push({ path: 'usage_limits.next_usage_reset_at', message: 'is not supported for providers: their periods follow calendar boundaries' });
  }
  return {
    type: u.type ?? 'cost',
    credit_limit: u.credit_limit ?? null,
    alert_threshold: u.alert_threshold ?? null,
    periodic_reset: u.periodic_reset ?? null,
    periodic_reset_days: u.periodic_reset_days ?? null,
  };
}

export interface ProviderView {
  object: 'provider';
  id: string;
  slug: string;
  name: string;
  organisation_id: string;
  workspace_id: string;
  integration_id: string;
  integration_slug: string | null;
  ai_provider_id: string | null;
  note: string | null;
  status: 'active' | 'expired';
  expires_at: string | null;
  usage_limits: KeyUsageLimits | null;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

export function toView(r: ProviderRecord, integration: IntegrationRecord | undefined, nowMs: number): ProviderView {
  return {
    object: 'provider',
    id: r.id,
    slug: r.slug,
    name: r.name,
    organisation_id: r.organisation_id,
    workspace_id: r.workspace_id,
    integration_id: r.integration_id,
    integration_slug: integration?.slug ?? null,
    ai_provider_id: integration?.ai_provider_id ?? null,
    note: r.note,
    status: isPast(r.expires_at, nowMs) ? 'expired' : 'active',
    expires_at: r.expires_at,
    usage_limits: r.usage_limits ?? null,
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
    created_by: r.created_by,
    last_updated_by: r.last_updated_by,
  };
}

export const allowsWorkspace = (integration: IntegrationRecord, workspaceId: string): boolean =>
  integration.workspace_ids === null || integration.workspace_ids.includes(workspaceId);

export class ProviderService {
  readonly #deps: CoreDeps;
  readonly #repo: ProviderRepository;
  readonly #integrations: IntegrationRepository;

  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new ProviderRepository(deps.repos.table);
    this.#integrations = new IntegrationRepository(deps.repos.table);
  }

  async create(caller: Principal, body: CreateProviderBody): Promise<{ id: string; slug: string; object: 'provider' }> {
    const problems: FieldProblem[] = [];
    const now = this.#deps.clock.now();
    if (isPast(body.expires_at ?? null, now)) problems.push({ path: 'expires_at', message: 'must be in the future' });
    const usageLimits = providerUsageLimits(body.usage_limits, problems);
    const integration = await this.#integrations.resolve(caller.organisationId, body.integration_id);
    if (!integration) problems.push({ path: 'integration_id', message: `no integration "${body.integration_id}" in this organisation` });
    else if (integration.status !== 'active') problems.push({ path: 'integration_id', message: `integration ${integration.slug} is archived` });
    if (problems.length) throw new ValidationError(problems);
    const workspaceId = await workspaceFor(this.#deps, caller, body.workspace_id, 'providers');
    const target = integration as IntegrationRecord;
    if (!allowsWorkspace(target, workspaceId)) {
      throw new ForbiddenError(`Integration ${target.slug} is not available to workspace ${workspaceId}`, { param: 'integration_id' });
    }
    const at = new Date(now).toISOString();
    const rec = await createWithSlug(body.slug ?? slugFrom(body.name, 'provider'), body.slug === undefined, async (slug) => {
      const rec: ProviderRecord = {
        id: randomUUID(),
        organisation_id: caller.organisationId,
        workspace_id: workspaceId,
        slug,
        name: body.name,
        integration_id: target.id,
        note: body.note ?? null,
        expires_at: body.expires_at ?? null,
        usage_limits: usageLimits,
        created_at: at,
        last_updated_at: at,
        created_by: caller.keyId,
        last_updated_by: caller.keyId,
      };
      await this.#repo.create(rec);
      return rec;
    });
    this.#deps.managedProviders.invalidate();
    return { id: rec.id, slug: rec.slug, object: 'provider' };
  }

  /**
   * A provider by slug or id, in the named workspace (`workspace_id`), the calling workspace key's
   * own, or (organisation keys) wherever it is unambiguous. 404 when the caller cannot see it.
   */
  async get(caller: Principal, slugOrId: string, workspace: string | null): Promise<ProviderRecord> {
    return findInWorkspace(this.#deps, this.#repo, caller, slugOrId, workspace, { one: 'provider', many: 'providers' });
  }

  async list(caller: Principal, workspace: string | null): Promise<ProviderRecord[]> {
    const workspaceId = await listWorkspace(this.#deps, caller, workspace, 'providers');
    return this.#repo.list(caller.organisationId, workspaceId);
  }

  /** The integrations the providers name, by id (for views). */
  async integrationsOf(caller: Principal, providers: readonly ProviderRecord[]): Promise<Map<string, IntegrationRecord>> {
    const ids = new Set(providers.map((p) => p.integration_id));
    const out = new Map<string, IntegrationRecord>();
    if (ids.size === 0) return out;
    if (ids.size === 1) {
      const one = await this.#integrations.getById(caller.organisationId, [...ids][0] as string, false);
      if (one) out.set(one.id, one);
      return out;
    }
    for (const i of await this.#integrations.list(caller.organisationId)) if (ids.has(i.id)) out.set(i.id, i);
    return out;
  }

  async update(caller: Principal, slugOrId: string, workspace: string | null, body: UpdateProviderBody) {
    const current = await this.get(caller, slugOrId, workspace);
    const now = this.#deps.clock.now();
    const problems: FieldProblem[] = [];
    if (body.expires_at && isPast(body.expires_at, now)) problems.push({ path: 'expires_at', message: 'must be in the future' });
    const usageLimits = body.usage_limits !== undefined ? providerUsageLimits(body.usage_limits, problems) : undefined;
    if (problems.length) throw new ValidationError(problems);
    const next: ProviderRecord = {
      ...current,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.note !== undefined ? { note: body.note ?? null } : {}),
      ...(body.expires_at !== undefined ? { expires_at: body.expires_at ?? null } : {}),
      ...(usageLimits !== undefined ? { usage_limits: usageLimits } : {}),
      last_updated_at: new Date(now).toISOString(),
      last_updated_by: caller.keyId,
    };
    await this.#repo.update(next);
    this.#deps.managedProviders.invalidate();
    return { id: next.id, slug: next.slug, object: 'provider' as const };
  }

  async delete(caller: Principal, slugOrId: string, workspace: string | null): Promise<void> {
    await this.#repo.delete(await this.get(caller, slugOrId, workspace));
    this.#deps.managedProviders.invalidate();
  }
}
