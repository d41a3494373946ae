/**
 * Secret reference rules: organisation-level (the scopes are organisation-only), credentials of
 * auth_config encrypted with the cipher and only ever shown masked, workspaces either all or a
 * list (ids or slugs, stored as ids), and no deletion while an integration maps the reference.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import type { ManagerType } from '../../ports/secret-managers.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { IntegrationRepository } from '../../store/integrations.ts';
import { SecretReferenceRepository, secretReferenceContext, type SecretReferenceRecord } from '../../store/secret-references.ts';
import { createWithSlug, maskAll, slugFrom } from '../integrations/common.ts';
import { validateAuthConfig, type SplitAuth } from './auth-config.ts';
import type { CreateSecretReferenceBody, UpdateSecretReferenceBody } from './schema.ts';

export interface SecretReferenceFilter {
  manager_type?: ManagerType | undefined;
  tags?: Record<string, string>;
  search?: string | undefined;
}

const OBJECT = 'secret-reference' as const;

export function summaryView(r: SecretReferenceRecord) {
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    manager_type: r.manager_type,
    status: r.status,
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
    object: OBJECT,
  };
}

/** Never a credential: those fields of auth_config only in their masked form. */
export function detailView(r: SecretReferenceRecord) {
  return {
    ...summaryView(r),
    organisation_id: r.organisation_id,
    description: r.description,
    secret_path: r.secret_path,
    secret_key: r.secret_key,
    allow_all_workspaces: r.allow_all_workspaces,
    allowed_workspaces: r.allow_all_workspaces ? [] : r.allowed_workspaces,
    tags: r.tags,
    created_by: r.created_by,
    auth_config: { ...r.auth_plain, ...r.masked_auth },
  };
}

export class SecretReferenceService {
  readonly #deps: CoreDeps;
  readonly #repo: SecretReferenceRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new SecretReferenceRepository(deps.repos.table);
  }

  #requireOrganisation(caller: Principal): void {
    if (!isOrganisationPrincipal(caller)) throw new ForbiddenError('Secret references are managed with organisation keys');
  }

  /** Workspace ids or slugs to ids; unknown ones are problems naming their index. */
  async #workspaceIds(caller: Principal, requested: readonly string[], problems: FieldProblem[]): Promise<string[]> {
    const ids: string[] = [];
    for (const [i, w] of requested.entries()) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, w);
      if (!ws) problems.push({ path: `allowed_workspaces[${i}]`, message: `no workspace "${w}" in this organisation` });
      else if (!ids.includes(ws.id)) ids.push(ws.id);
    }
    return ids;
  }

  /** Vault reads `<mount>/<path>`: a path without a mount could never be read. */
  #checkPath(manager: ManagerType, secretPath: string, problems: FieldProblem[]): void {
    if (manager === 'hashicorp_vault' && !/[^/]\/+[^/]/.test(secretPath))
      problems.push({ path: 'secret_path', message: 'must be "<mount>/<path>" for Vault KV v2 (e.g. secret/gantry/openai)' });
  }

  #auth(manager: ManagerType, raw: Record<string, unknown>, problems: FieldProblem[]): SplitAuth {
    try {
      return validateAuthConfig(manager, raw, this.#deps.trustedHosts);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      problems.push(...err.problems);
      return { plain: {}, secret: {} };
    }
  }

  async #seal(orgId: string, id: string, secret: Record<string, string>): Promise<string | null> {
    return Object.keys(secret).length ? this.#deps.cipher.encrypt(JSON.stringify(secret), secretReferenceContext(orgId, id)) : null;
  }

  async create(caller: Principal, body: CreateSecretReferenceBody) {
    this.#requireOrganisation(caller);
    if (body.organisation_id !== undefined && body.organisation_id !== caller.organisationId) {
      throw new NotFoundError(`Organisation ${body.organisation_id} not found`, { param: 'organisation_id' });
    }
    const problems: FieldProblem[] = [];
    const auth = this.#auth(body.manager_type, body.auth_config, problems);
    this.#checkPath(body.manager_type, body.secret_path, problems);
    const allowed = body.allowed_workspaces ? await this.#workspaceIds(caller, body.allowed_workspaces, problems) : [];
    if (problems.length) throw new ValidationError(problems);
    const id = randomUUID();
    const now = new Date(this.#deps.clock.now()).toISOString();
    const base: Omit<SecretReferenceRecord, 'slug'> = {
      id,
      organisation_id: caller.organisationId,
      name: body.name,
      description: body.description ?? null,
      manager_type: body.manager_type,
      auth_plain: auth.plain,
      auth_secret: await this.#seal(caller.organisationId, id, auth.secret),
      masked_auth: maskAll(auth.secret),
      secret_path: body.secret_path,
      secret_key: body.secret_key ?? null,
      allow_all_workspaces: body.allowed_workspaces === undefined,
      allowed_workspaces: allowed,
      tags: body.tags ?? null,
      status: 'ACTIVE',
      version: 1,
      created_by: caller.userId ?? caller.keyId,
      created_at: now,
      last_updated_at: now,
    };
    auditTarget(id, null);
    const rec = await createWithSlug(body.slug ?? slugFrom(body.name, 'secret'), body.slug === undefined, async (slug) => {
      const rec = { ...base, slug };
      await this.#repo.create(rec);
      return rec;
    });
    this.#deps.secrets.invalidate();
    return { id, slug: rec.slug, object: OBJECT };
  }

  async get(caller: Principal, idOrSlug: string): Promise<SecretReferenceRecord> {
    this.#requireOrganisation(caller);
    const rec = await this.#repo.resolve(caller.organisationId, idOrSlug);
    if (!rec) throw new NotFoundError(`Secret reference ${idOrSlug} not found`);
    return rec;
  }

  async list(caller: Principal, filter: SecretReferenceFilter): Promise<SecretReferenceRecord[]> {
    this.#requireOrganisation(caller);
    const tags = Object.entries(filter.tags ?? {});
    const search = filter.search?.toLowerCase();
    return (await this.#repo.list(caller.organisationId)).filter(
      (r) =>
        (filter.manager_type === undefined || r.manager_type === filter.manager_type) &&
        tags.every(([k, v]) => r.tags?.[k] === v) &&
        (search === undefined || r.name.toLowerCase().includes(search) || r.slug.toLowerCase().includes(search)),
    );
  }

  /** auth_config is merged into the stored one (a credential sent back masked keeps the stored value), then checked whole. */
  async #mergedAuth(current: SecretReferenceRecord, incoming: Record<string, unknown>, problems: FieldProblem[]): Promise<SplitAuth> {
    const stored: Record<string, string> =
      current.auth_secret === null
        ? {}
        : JSON.parse(await this.#deps.cipher.decrypt(current.auth_secret, secretReferenceContext(current.organisation_id, current.id)));
    const merged: Record<string, unknown> = { ...current.auth_plain, ...stored };
    for (const [k, v] of Object.entries(incoming)) {
      if (v === null) delete merged[k];
      else if (!(k in current.masked_auth && v === current.masked_auth[k])) merged[k] = v;
    }
    return this.#auth(current.manager_type, merged, problems);
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateSecretReferenceBody) {
    const current = await this.get(caller, idOrSlug);
    const problems: FieldProblem[] = [];
    const auth = body.auth_config ? await this.#mergedAuth(current, body.auth_config, problems) : undefined;
    if (body.secret_path !== undefined) this.#checkPath(current.manager_type, body.secret_path, problems);
    const allowed = body.allowed_workspaces ? await this.#workspaceIds(caller, body.allowed_workspaces, problems) : undefined;
    if (problems.length) throw new ValidationError(problems);
    const allowAll = allowed ? false : (body.allow_all_workspaces ?? current.allow_all_workspaces);
    if (!allowAll && !allowed && current.allowed_workspaces.length === 0) {
      throw ValidationError.field('allowed_workspaces', 'is required when allow_all_workspaces is false');
    }
    const next: SecretReferenceRecord = {
      ...current,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description ?? null } : {}),
      ...(body.secret_path !== undefined ? { secret_path: body.secret_path } : {}),
      ...(body.secret_key !== undefined ? { secret_key: body.secret_key ?? null } : {}),
      ...(body.tags !== undefined ? { tags: body.tags ?? null } : {}),
      allow_all_workspaces: allowAll,
      allowed_workspaces: allowAll ? [] : (allowed ?? current.allowed_workspaces),
      version: current.version + 1,
      last_updated_at: new Date(this.#deps.clock.now()).toISOString(),
    };
    if (auth) {
      next.auth_plain = auth.plain;
      next.auth_secret = await this.#seal(current.organisation_id, current.id, auth.secret);
      next.masked_auth = maskAll(auth.secret);
    }
    auditTarget(current.id, null);
    await this.#repo.update(next, current.version);
    this.#deps.secrets.invalidate();
    return detailView(next);
  }

  /** Refused (AB07) while an integration maps the reference. */
  async delete(caller: Principal, idOrSlug: string): Promise<void> {
    const rec = await this.get(caller, idOrSlug);
    const users = (await new IntegrationRepository(this.#deps.repos.table).list(rec.organisation_id)).filter((i) =>
      (i.secret_mappings ?? []).some((m) => m.secret_reference_id === rec.id),
    );
    if (users.length > 0) {
      const names = users
        .slice(0, 10)
        .map((i) => i.slug)
        .join(', ');
      throw new ConflictError(`Secret reference ${rec.slug} is mapped by ${users.length} integration(s): ${names}; remove the mappings first`);
    }
    auditTarget(rec.id, null);
    await this.#repo.delete(rec);
    this.#deps.secrets.invalidate();
  }
}
