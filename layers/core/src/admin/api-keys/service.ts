/**
 * API key rules: who may create which type (docs/design/spec.md#roles-and-keys), which scopes a key may carry,
 * updates, rotation, and what a key shows.
 *
 * - Organisation keys (`organisation-service`): organisation owners and admins only.
 * - Workspace keys (`workspace-service`, `workspace-user`): owners and admins in any workspace,
 *   workspace managers (and workspace service keys) in their own workspace; members none.
 * - A user key belongs to a user of the workspace (`user_id`, or the calling user).
 * - A caller can only hand out scopes it holds itself; organisation scopes never go to workspace keys.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { generateApiKey, hashApiKey, maskApiKey } from '../../policy/api-key-secret.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { ORGANISATION_ONLY_SCOPES, type Scope } from '../../policy/scopes.ts';
import { auditTarget } from '../../store/audit-context.ts';
import type { ApiKeyDefaults, ApiKeyRecord, ApiKeyType, KeyRateLimit, KeyUsageLimits, RotationPolicy } from '../../store/entities.ts';
import { ConfigRepository } from '../../store/configs.ts';
import { IdentityRepository } from '../../store/identity.ts';
import { keyRecipients, rotatedMail, sendKeyMail } from './alerts.ts';
import { DEFAULT_TRANSITION_MS, rotatedRecord } from './lifecycle.ts';
import { addPeriod, iso, minPeriodMs, nextUsageReset } from './periods.ts';
import type { CreateApiKeyBody, RotateApiKeyBody, RotationPolicyBody, UpdateApiKeyBody, UsageLimitsBody } from './schema.ts';

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
  /** Masked; the key itself is only returned by the create and rotate calls. */
  key: string;
  expires_at: string | null;
  created_at: string;
  last_updated_at: string;
  created_by: string | null;
  last_updated_by: string | null;
  last_reset_at: string | null;
  /** How many times the key's usage was reset; its usage counts start anew with each. */
  reset_usage: number;
  defaults: ApiKeyDefaults | null;
  rotation_policy: RotationPolicy | null;
  last_rotated_at: string | null;
  /** Until when the key replaced by the last rotation still works (null outside a transition). */
  key_transition_expires_at: string | null;
  alert_emails: string[];
  usage_limits: KeyUsageLimits | null;
  rate_limits: KeyRateLimit[];
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
    reset_usage: r.reset_usage ?? 0,
    defaults: r.defaults ?? null,
    rotation_policy: r.rotation_policy ?? null,
    last_rotated_at: r.last_rotated_at ?? null,
    key_transition_expires_at: r.previous_key_hash ? (r.previous_key_expires_at ?? null) : null,
    alert_emails: r.alert_emails ?? [],
    usage_limits: r.usage_limits ?? null,
    rate_limits: r.rate_limits ?? [],
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
      reset_usage: 0,
    },
  };
}

const organisationScopeProblems = (scopes: readonly string[] | undefined): FieldProblem[] =>
  (scopes ?? []).flatMap((s, i) =>
    ORGANISATION_ONLY_SCOPES.has(s as Scope) ? [{ path: `scopes[${i}]`, message: `${s} is an organisation scope and cannot be given to a workspace key` }] : [],
  );

export class ApiKeyService {
  readonly #deps: CoreDeps;
  readonly #identity: IdentityRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#identity = new IdentityRepository(deps.repos.table);
  }

  #now(): number {
    return this.#deps.clock.now();
  }

  /** No privilege escalation: a caller can only hand out scopes it holds itself. */
  #checkGrant(caller: Principal, scopes: readonly string[]): void {
    if (caller.owner) return;
    const missing = scopes.filter((s) => !caller.scopes.has(s));
    if (missing.length)
      throw new ForbiddenError(`Cannot grant scopes this ${caller.kind === 'jwt' ? 'token' : 'API key'} does not hold: ${missing.join(', ')}`);
  }

  async create(caller: Principal, type: ApiKeyType, body: CreateApiKeyBody): Promise<{ id: string; key: string; object: 'api-key' }> {
    const problems: FieldProblem[] = [];
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
      problems.push(...organisationScopeProblems(body.scopes));
      if (type === 'workspace-user' && body.user_id === undefined && !caller.userId) {
        problems.push({ path: 'user_id', message: 'is required for workspace user keys' });
      }
      if (type === 'workspace-service' && body.user_id !== undefined) {
        problems.push({ path: 'user_id', message: 'is only allowed for workspace user keys' });
      }
    }
    if (body.organisation_id !== undefined && body.organisation_id !== caller.organisationId) {
      problems.push({ path: 'organisation_id', message: "must be the caller's organisation" });
    }
    if (body.expires_at && Date.parse(body.expires_at) <= this.#now()) {
      problems.push({ path: 'expires_at', message: 'must be in the future' });
    }
    if (problems.length) throw new ValidationError(problems);

    let workspaceId: string | null = null;
    if (body.workspace_id !== undefined) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, body.workspace_id);
      if (!ws) throw new NotFoundError(`Workspace ${body.workspace_id} not found`, { param: 'workspace_id' });
      if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
        throw new ForbiddenError('Workspace keys may only create keys in their own workspace');
      }
      if (ws.status === 'archived') throw new ConflictError(`Workspace ${ws.slug} is archived`);
      workspaceId = ws.id;
    }
    let userId: string | null = null;
    if (type === 'workspace-user' && workspaceId) {
      userId = body.user_id ?? caller.userId;
      if (userId && !(await this.#isWorkspaceUser(caller.organisationId, workspaceId, userId))) {
        throw ValidationError.field('user_id', `${userId} is not a user of the workspace`);
      }
    }
    this.#checkGrant(caller, body.scopes);

    const defaults = await this.#checkDefaults(caller, workspaceId, body.defaults ?? null);
    const { record, key } = newKeyRecord(
      {
        organisation_id: caller.organisationId,
        workspace_id: workspaceId,
        user_id: userId,
        type,
        name: body.name,
        description: body.description ?? null,
        scopes: [...new Set(body.scopes)],
        expires_at: body.expires_at ?? null,
        owner: false,
        created_by: caller.keyId,
      },
      this.#now(),
    );
    if (defaults) record.defaults = defaults;
    if (body.alert_emails) record.alert_emails = body.alert_emails.map((e) => e.toLowerCase());
    if (body.rate_limits) record.rate_limits = body.rate_limits;
    if (body.usage_limits) record.usage_limits = this.#usageLimits(body.usage_limits);
    if (body.rotation_policy) record.rotation_policy = await this.#rotationPolicy(body.rotation_policy, record, 'rotation_policy');
    auditTarget(record.id, workspaceId);
    await this.#deps.repos.apiKeys.create(record);
    return { id: record.id, key, object: 'api-key' };
  }

  async #isWorkspaceUser(orgId: string, workspaceId: string, userId: string): Promise<boolean> {
    const user = await this.#identity.getUser(orgId, userId);
    if (!user) return false;
    if (user.role === 'owner' || user.role === 'admin') return true;
    return (await this.#identity.getMember(orgId, workspaceId, userId)) !== undefined;
  }

  #usageLimits(body: UsageLimitsBody): KeyUsageLimits {
    const out: KeyUsageLimits = { ...body };
    if (body.next_usage_reset_at) {
      if (Date.parse(body.next_usage_reset_at) <= this.#now()) throw ValidationError.field('usage_limits.next_usage_reset_at', 'must be in the future');
    } else {
      const next = nextUsageReset(this.#now(), body);
      out.next_usage_reset_at = next === null ? null : iso(next);
    }
    return out;
  }

  /** A policy as stored: the first rotation computed, the transition checked against the period. */
  async #rotationPolicy(body: RotationPolicyBody, key: ApiKeyRecord, path: string): Promise<RotationPolicy> {
    const now = this.#now();
    const period = body.rotation_period ?? null;
    const transition = body.key_transition_period_ms ?? DEFAULT_TRANSITION_MS;
    const problems: FieldProblem[] = [];
    if (body.next_rotation_at && Date.parse(body.next_rotation_at) <= now) {
      problems.push({ path: `${path}.next_rotation_at`, message: 'must be in the future' });
    }
    if (period && transition >= minPeriodMs(period)) {
      problems.push({ path: `${path}.key_transition_period_ms`, message: `must be shorter than the ${period} rotation period` });
    }
    // An automatic rotation makes a key nobody has seen: it is e-mailed, so someone must receive it.
    if ((await keyRecipients(this.#deps, key)).length === 0) {
      problems.push({ path, message: 'needs alert_emails (or a user key): the key an automatic rotation makes is e-mailed to them' });
    }
    if (problems.length) throw new ValidationError(problems);
    return {
      rotation_period: period,
      next_rotation_at: body.next_rotation_at ? iso(Date.parse(body.next_rotation_at)) : period ? iso(addPeriod(now, period)) : null,
      key_transition_period_ms: transition,
    };
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

  /** A key the caller may change: organisation keys only by owners and admins. */
  async #manageable(caller: Principal, id: string, what: string): Promise<ApiKeyRecord> {
    const record = await this.get(caller, id);
    if (record.type === 'organisation-service' && !isOrganisationPrincipal(caller)) {
      throw new ForbiddenError(`Only organisation keys may ${what} organisation keys`);
    }
    auditTarget(record.id, record.workspace_id);
    return record;
  }

  async update(caller: Principal, id: string, body: UpdateApiKeyBody): Promise<void> {
    const record = await this.#manageable(caller, id, 'change');
    const problems: FieldProblem[] = record.workspace_id !== null ? organisationScopeProblems(body.scopes) : [];
    if (body.expires_at && Date.parse(body.expires_at) <= this.#now()) {
      problems.push({ path: 'expires_at', message: 'must be in the future' });
    }
    if (problems.length) throw new ValidationError(problems);
    if (body.scopes) this.#checkGrant(caller, body.scopes);
    const now = this.#now();
    let next: ApiKeyRecord = {
      ...record,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.scopes !== undefined ? { scopes: [...new Set(body.scopes)] } : {}),
      ...(body.expires_at !== undefined ? { expires_at: body.expires_at, expiry_warning_for: null } : {}),
      ...(body.defaults !== undefined ? { defaults: await this.#checkDefaults(caller, record.workspace_id, body.defaults) } : {}),
      ...(body.alert_emails !== undefined ? { alert_emails: body.alert_emails?.map((e) => e.toLowerCase()) ?? null } : {}),
      ...(body.rate_limits !== undefined ? { rate_limits: body.rate_limits } : {}),
      ...(body.usage_limits !== undefined ? { usage_limits: body.usage_limits ? this.#usageLimits(body.usage_limits) : null } : {}),
      last_updated_at: iso(now),
      last_updated_by: caller.keyId,
    };
    // A key whose expiry moved into the future works again.
    if (record.status === 'expired' && body.expires_at !== undefined) next.status = 'active';
    if (body.rotation_policy !== undefined) {
      next = {
        ...next,
        rotation_policy: body.rotation_policy ? await this.#rotationPolicy(body.rotation_policy, next, 'rotation_policy') : null,
        rotation_notice_for: null,
      };
    }
    if (body.reset_usage) {
      next = { ...next, reset_usage: (record.reset_usage ?? 0) + 1, last_reset_at: iso(now), status: next.status === 'exhausted' ? 'active' : next.status };
    }
    await this.#deps.repos.apiKeys.update(next, { previous: record });
    this.#deps.keyAuth.invalidateKey(record.id);
  }

  /**
   * Manual rotation: a new key at once, the old one accepted for `key_transition_period_ms`
   * (default: the key's policy, else one hour). Works with or without a rotation policy.
   */
  async rotate(
    caller: Principal,
    id: string,
    body: RotateApiKeyBody,
  ): Promise<{ id: string; key: string; key_transition_expires_at: string; object: 'api-key' }> {
    const record = await this.#manageable(caller, id, 'rotate');
    if (record.status === 'expired') throw new ConflictError(`API key ${id} has expired: it cannot be rotated`);
    const transition = body.key_transition_period_ms ?? record.rotation_policy?.key_transition_period_ms ?? DEFAULT_TRANSITION_MS;
    const rotation = rotatedRecord(record, this.#now(), transition, caller.keyId);
    await this.#deps.repos.apiKeys.rotate(record, rotation.record);
    this.#deps.keyAuth.invalidateKey(record.id);
    await sendKeyMail(this.#deps, rotation.record, rotatedMail(rotation.record, rotation.transitionEnds));
    return { id: record.id, key: rotation.key, key_transition_expires_at: rotation.transitionEnds, object: 'api-key' };
  }

  /** A key the caller may see, or 404 (never 403, so ids of other workspaces do not leak). */
  async get(caller: Principal, id: string): Promise<ApiKeyRecord> {
    const record = await this.#deps.repos.apiKeys.getById(caller.organisationId, id);
    if (!record || !visibleTo(caller, record)) throw new NotFoundError(`API key ${id} not found`);
    return record;
  }

  async list(caller: Principal, workspace: string | undefined): Promise<ApiKeyRecord[]> {
    return this.#deps.repos.apiKeys.list(caller.organisationId, await this.#listedWorkspace(caller, workspace));
  }

  /** One page of the keys `list` would answer, without reading the others. */
  async page(caller: Principal, workspace: string | undefined, limit: number, after?: { id: string; created_at: string }) {
    return this.#deps.repos.apiKeys.page(caller.organisationId, await this.#listedWorkspace(caller, workspace), limit, after);
  }

  /** The workspace a list covers: the one named, and always the caller's own for a workspace key. */
  async #listedWorkspace(caller: Principal, workspace: string | undefined): Promise<string | undefined> {
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
    return workspaceId;
  }

  async delete(caller: Principal, id: string): Promise<void> {
    const record = await this.#manageable(caller, id, 'delete');
    if (record.owner) throw new ForbiddenError('The organisation owner key cannot be deleted');
    await this.#deps.repos.apiKeys.delete(record);
    this.#deps.keyAuth.invalidateKey(record.id);
  }
}

function visibleTo(caller: Principal, r: ApiKeyRecord): boolean {
  return isOrganisationPrincipal(caller) || (r.workspace_id !== null && r.workspace_id === caller.workspaceId);
}
