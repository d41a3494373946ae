/** Saved configs: validated with the gateway's own validator, versioned on every config change. */
import { randomUUID } from 'node:crypto';
import { createWithSlug, slugFrom } from '../integrations/common.ts';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { parseConfig } from '../../gateway/routing/validate.ts';
import { findCheck } from '../../guardrails/registry.ts';
import type { ConfigNode } from '../../kernel/routing.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { configSecretContext, maskConfigSecrets, sealConfigSecrets } from '../../store/config-secrets.ts';
import { ConfigRepository, type ConfigVersionRecord, type SavedConfigRecord } from '../../store/configs.ts';
import type { CreateConfigBody, UpdateConfigBody } from './schema.ts';

/** Runs the routing validator, naming problems by their place in the admin body (`config.…`). */
export function validateConfigBody(raw: Record<string, unknown>): ConfigNode {
  try {
    return parseConfig(raw, { findCheck });
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    throw new ValidationError(err.problems.map((p) => ({ path: p.path ? `config.${p.path}` : 'config', message: p.message })));
  }
}

/** A readable slug from the name, `pc-` first as the reference's configs have. */
const slugFor = (name: string): string => `pc-${slugFrom(name, 'config').slice(0, 40)}`;

export interface ConfigView {
  object: 'config';
  id: string;
  slug: string;
  name: string;
  organisation_id: string;
  workspace_id: string;
  status: string;
  is_default: boolean;
  version: number;
  version_id: string;
  config: Record<string, unknown>;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
}

/** Secrets in the config (provider keys) are answered masked, to every role. */
export const toView = async (r: SavedConfigRecord): Promise<ConfigView> => ({ object: 'config', ...r, config: await maskConfigSecrets(r.config) });

export const versionView = async (v: ConfigVersionRecord) => ({ object: 'config-version' as const, ...v, config: await maskConfigSecrets(v.config) });

export class ConfigService {
  readonly #deps: CoreDeps;
  readonly #repo: ConfigRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#repo = new ConfigRepository(deps.repos.table);
  }

  async #workspaceFor(caller: Principal, requested: string | undefined): Promise<string> {
    if (requested === undefined) {
      if (caller.workspaceId) return caller.workspaceId;
      throw ValidationError.field('workspace_id', 'is required when the caller is an organisation key');
    }
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, requested);
    if (!ws) throw new NotFoundError(`Workspace ${requested} not found`, { param: 'workspace_id' });
    if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
      throw new ForbiddenError('Workspace keys may only manage configs of their own workspace');
    }
    return ws.id;
  }

  async #currentDefault(workspaceId: string): Promise<SavedConfigRecord | undefined> {
    return (await this.#repo.listByWorkspace(workspaceId)).find((c) => c.is_default);
  }

  async create(caller: Principal, body: CreateConfigBody) {
    const config = validateConfigBody(body.config);
    const workspaceId = await this.#workspaceFor(caller, body.workspace_id);
    const isDefault = body.isDefault ?? body.is_default;
    const now = new Date(this.#deps.clock.now()).toISOString();
    const id = randomUUID();
    const versionId = randomUUID();
    const sealed = await sealConfigSecrets(
      config as Record<string, unknown>,
      this.#deps.cipher,
      configSecretContext({ organisation_id: caller.organisationId, id }),
    );
    const rec: SavedConfigRecord = {
      id,
      slug: body.slug ?? slugFor(body.name),
      name: body.name,
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      status: 'active',
      is_default: isDefault,
      version: 1,
      version_id: versionId,
      config: sealed,
      created_at: now,
      last_updated_at: now,
      created_by: caller.keyId,
      last_updated_by: caller.keyId,
    };
    const version: ConfigVersionRecord = {
      id: versionId,
      config_id: id,
      version: 1,
      config: rec.config,
      name: rec.name,
      created_at: now,
      created_by: caller.keyId,
    };
    const previousDefault = isDefault ? await this.#currentDefault(workspaceId) : undefined;
    // A generated slug that is taken gets a suffix; a chosen one stays a conflict.
    rec.slug = await createWithSlug(rec.slug, body.slug === undefined, async (slug) => {
      await this.#repo.create({ ...rec, slug }, version, previousDefault);
      return slug;
    });
    this.#deps.savedConfigs.invalidate();
    return { id, slug: rec.slug, version_id: versionId, object: 'config' as const };
  }

  /** A config the caller may see, by id or slug; 404 otherwise. */
  async get(caller: Principal, idOrSlug: string): Promise<SavedConfigRecord> {
    const rec = await this.#repo.resolve(caller.organisationId, idOrSlug);
    if (!rec || (!isOrganisationPrincipal(caller) && rec.workspace_id !== caller.workspaceId)) {
      throw new NotFoundError(`Config ${idOrSlug} not found`);
    }
    return rec;
  }

  async list(caller: Principal, workspace: string | undefined): Promise<SavedConfigRecord[]> {
    if (workspace === undefined && isOrganisationPrincipal(caller)) return this.#repo.listByOrganisation(caller.organisationId);
    return this.#repo.listByWorkspace(await this.#workspaceFor(caller, workspace));
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateConfigBody) {
    const current = await this.get(caller, idOrSlug);
    const now = new Date(this.#deps.clock.now()).toISOString();
    const next: SavedConfigRecord = {
      ...current,
      name: body.name ?? current.name,
      status: body.status ?? current.status,
      is_default: body.is_default ?? current.is_default,
      last_updated_at: now,
      last_updated_by: caller.keyId,
    };
    let version: ConfigVersionRecord | undefined;
    if (body.config !== undefined) {
      const config = validateConfigBody(body.config) as Record<string, unknown>;
      next.config = await sealConfigSecrets(config, this.#deps.cipher, configSecretContext(current), current.config);
      next.version = current.version + 1;
      next.version_id = randomUUID();
      version = {
        id: next.version_id,
        config_id: current.id,
        version: next.version,
        config: next.config,
        name: next.name,
        created_at: now,
        created_by: caller.keyId,
      };
    }
    const becomesDefault = next.is_default && !current.is_default;
    await this.#repo.update(next, current.version, version, becomesDefault ? await this.#currentDefault(current.workspace_id) : undefined);
    this.#deps.savedConfigs.invalidate();
    return { id: next.id, slug: next.slug, version_id: next.version_id, object: 'config' as const };
  }

  async versions(caller: Principal, idOrSlug: string): Promise<ConfigVersionRecord[]> {
    return this.#repo.versions((await this.get(caller, idOrSlug)).id);
  }

  async delete(caller: Principal, idOrSlug: string): Promise<void> {
    const rec = await this.get(caller, idOrSlug);
    const users = await this.#deps.repos.apiKeys.listByConfig(caller.organisationId, [rec.id, rec.slug]);
    if (users.length) {
      throw new ConflictError(
        `Config ${rec.slug} is the default config of ${users.length} API key(s) (${users.map((k) => k.name).join(', ')}); change them first`,
      );
    }
    await this.#repo.delete(rec);
    this.#deps.savedConfigs.invalidate();
  }
}
