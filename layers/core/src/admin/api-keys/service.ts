/** API key rules: who may create which type, which scopes a key may carry, what a key shows. */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { generateApiKey, hashApiKey, maskApiKey } from '../../policy/api-key-secret.ts';
import { isOrganisationPrincipal, type Principal } from '../../policy/principal.ts';
import { ORGANISATION_ONLY_SCOPES, type Scope } from '../../policy/scopes.ts';
import type { ApiKeyDefaults, ApiKeyRecord, ApiKeyType } from '../../store/entities.ts';
import { ConfigRepository } from '../../store/configs.ts';
import type { CreateApiKeyBody, UpdateApiKeyBody } from './schema.ts';

export interface ApiKeyView {
  object: 'api-key';
  id: string;
  name: string;
  description: string | null;
  type: ApiKeyType;
  organisation_id: string;
  workspace_id: string | null;
  user_id: string | null;
  scopes: string[];
  status: string;
  /** Masked; the key itself is only returned by the create call. */
  key: string;
  expires_at: string | null;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
  last_reset_at: string | null;
  defaults: ApiKeyDefaults | null;
}

export function toView(r: ApiKeyRecord): ApiKeyView {
  return {
    object: 'api-key',
    id: r.id,
    name: r.name,
    description: r.description,
    type: r.type,
    organisation_id: r.organisation_id,
    workspace_id: r.workspace_id,
    user_id: r.user_id,
    scopes: r.scopes,
    status: r.status,
    key: r.key_mask,
    expires_at: r.expires_at,
    created_at: r.created_at,
    last_updated_at: r.last_updated_at,
    created_by: r.created_by,
    last_updated_by: r.last_updated_by,
    last_reset_at: r.last_reset_at,
    defaults: r.defaults ?? null,
  };
}

/** Builds a new key record; the caller stores it. Returns the raw key, shown once. */
export function newKeyRecord(
  fields: Pick<ApiKeyRecord, 'organisation_id' | 'workspace_id' | 'user_id' | 'type' | 'name' | 'description' | 'scopes' | 'expires_at' | 'owner'> & {
    created_by: string | null;
  },
  nowMs: number,
  rawKey: string = generateApiKey(),
): { record: ApiKeyRecord; key: string } {
  const now = new Date(nowMs).toISOString();
  return {
    key: rawKey,
    record: {
      ...fields,
      id: randomUUID(),
      status: 'active',
      key_hash: hashApiKey(rawKey),
      key_mask: maskApiKey(rawKey),
      created_at: now,
      last_updated_at: now,
      last_updated_by: fields.created_by,
      last_reset_at: null,
    },
  };
}

export class ApiKeyService {
  readonly #deps: CoreDeps;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
  }

  async create(caller: Principal, type: ApiKeyType, body: CreateApiKeyBody): Promise<{ id: string; key: string; object: 'api-key' }> {
    const problems: FieldProblem[] = [];
    let workspaceId: string | null = null;
    if (type === 'organisation-service') {
      if (!isOrganisationPrincipal(caller)) {
        throw new ForbiddenError('Only organisation owners and admins may create organisation keys');
      }
      if (body.workspace_id !== undefined) problems.push({ path: 'workspace_id', message: 'is not allowed for organisation keys' });
      if (body.user_id !== undefined) problems.push({ path: 'user_id', message: 'is not allowed for organisation keys' });
    } else {
      if (body.workspace_id === undefined) {
        problems.push({ path: 'workspace_id', message: 'is required for workspace keys' });
      }
      body.scopes.forEach((s, i) => {
        if (ORGANISATION_ONLY_SCOPES.has(s as Scope)) {
          problems.push({ path: `scopes[${i}]`, message: `${s} is an organisation scope and cannot be given to a workspace key` });
        }
      });
      if (type === 'workspace-user' && body.user_id === undefined && !caller.userId) {
        problems.push({ path: 'user_id', message: 'is required for workspace user keys' });
      }
      if (type === 'workspace-service' && body.user_id !== undefined) {
        problems.push({ path: 'user_id', message: 'is only allowed for workspace user keys' });
      }
    }
    if (body.expires_at && Date.parse(body.expires_at) <= this.#deps.clock.now()) {
      problems.push({ path: 'expires_at', message: 'must be in the future' });
    }
    if (problems.length) throw new ValidationError(problems);

    if (body.workspace_id !== undefined) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, body.workspace_id);
      if (!ws) throw new NotFoundError(`Workspace ${body.workspace_id} not found`, { param: 'workspace_id' });
      if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
        throw new ForbiddenError('Workspace keys may only create keys in their own workspace');
      }
      workspaceId = ws.id;
    }
    // No privilege escalation: a key can only hand out scopes it holds itself.
    if (!caller.owner) {
      const missing = body.scopes.filter((s) => !caller.scopes.has(s));
      if (missing.length) throw new ForbiddenError(`Cannot grant scopes this API key does not hold: ${missing.join(', ')}`);
    }

    const defaults = await this.#checkDefaults(caller, workspaceId, body.defaults ?? null);
    const { record, key } = newKeyRecord(
      {
        organisation_id: caller.organisationId,
        workspace_id: workspaceId,
        user_id: type === 'workspace-user' ? (body.user_id ?? caller.userId) : null,
        type,
        name: body.name,
        description: body.description ?? null,
        scopes: [...new Set(body.scopes)],
        expires_at: body.expires_at ?? null,
        owner: false,
        created_by: caller.keyId,
      },
      this.#deps.clock.now(),
    );
    if (defaults) record.defaults = defaults;
    await this.#deps.repos.apiKeys.create(record);
    return { id: record.id, key, object: 'api-key' };
  }

  /** A pinned config must exist in the key's workspace (or, for organisation keys, the organisation). */
  async #checkDefaults(caller: Principal, workspaceId: string | null, defaults: ApiKeyDefaults | null): Promise<ApiKeyDefaults | null> {
    if (!defaults?.config_id) return defaults;
    const config = await new ConfigRepository(this.#deps.repos.table).resolve(caller.organisationId, defaults.config_id);
    if (!config || (workspaceId !== null && config.workspace_id !== workspaceId)) {
      throw ValidationError.field('defaults.config_id', `no config "${defaults.config_id}" in the key's workspace`);
    }
    return defaults;
  }

  async update(caller: Principal, id: string, body: UpdateApiKeyBody): Promise<void> {
    const record = await this.get(caller, id);
    if (record.type === 'organisation-service' && !isOrganisationPrincipal(caller)) {
      throw new ForbiddenError('Only organisation keys may change organisation keys');
    }
    const problems: FieldProblem[] = [];
    if (record.workspace_id !== null) {
      body.scopes?.forEach((s, i) => {
        if (ORGANISATION_ONLY_SCOPES.has(s as Scope)) {
          problems.push({ path: `scopes[${i}]`, message: `${s} is an organisation scope and cannot be given to a workspace key` });
        }
      });
    }
    if (body.expires_at && Date.parse(body.expires_at) <= this.#deps.clock.now()) {
      problems.push({ path: 'expires_at', message: 'must be in the future' });
    }
    if (problems.length) throw new ValidationError(problems);
    if (body.scopes && !caller.owner) {
      const missing = body.scopes.filter((s) => !caller.scopes.has(s));
      if (missing.length) throw new ForbiddenError(`Cannot grant scopes this API key does not hold: ${missing.join(', ')}`);
    }
    const next: ApiKeyRecord = {
      ...record,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.scopes !== undefined ? { scopes: [...new Set(body.scopes)] } : {}),
      ...(body.expires_at !== undefined ? { expires_at: body.expires_at } : {}),
      ...(body.defaults !== undefined ? { defaults: await this.#checkDefaults(caller, record.workspace_id, body.defaults) } : {}),
      last_updated_at: new Date(this.#deps.clock.now()).toISOString(),
      last_updated_by: caller.keyId,
    };
    await this.#deps.repos.apiKeys.update(next);
    this.#deps.keyAuth.invalidate(record.key_hash);
  }

  /** A key the caller may see, or 404 (never 403, so ids of other workspaces do not leak). */
  async get(caller: Principal, id: string): Promise<ApiKeyRecord> {
    const record = await this.#deps.repos.apiKeys.getById(caller.organisationId, id);
    if (!record || !visibleTo(caller, record)) throw new NotFoundError(`API key ${id} not found`);
    return record;
  }

  async list(caller: Principal, workspace: string | undefined): Promise<ApiKeyRecord[]> {
    let workspaceId: string | undefined;
    if (workspace !== undefined) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, workspace);
      if (!ws) throw new NotFoundError(`Workspace ${workspace} not found`, { param: 'workspace_id' });
      workspaceId = ws.id;
    }
    if (!isOrganisationPrincipal(caller)) {
      if (workspaceId !== undefined && workspaceId !== caller.workspaceId) {
        throw new ForbiddenError('Workspace keys may only list keys of their own workspace');
      }
      workspaceId = caller.workspaceId ?? undefined;
    }
    return this.#deps.repos.apiKeys.list(caller.organisationId, workspaceId);
  }

  async delete(caller: Principal, id: string): Promise<void> {
    const record = await this.get(caller, id);
    if (record.owner) throw new ForbiddenError('The organisation owner key cannot be deleted');
    if (record.type === 'organisation-service' && !isOrganisationPrincipal(caller)) {
      throw new ForbiddenError('Only organisation keys may delete organisation keys');
    }
    await this.#deps.repos.apiKeys.delete(record);
    this.#deps.keyAuth.invalidate(record.key_hash);
  }
}

function visibleTo(caller: Principal, r: ApiKeyRecord): boolean {
  return isOrganisationPrincipal(caller) || (r.workspace_id !== null && r.workspace_id === caller.workspaceId);
}
