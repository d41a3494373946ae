/**
 * Workspaces: created, archived and deleted by organisation owners and admins; read and partly
 * updated (name, description, defaults) by their managers. Limits, security setting overrides
 * and the status stay with owners and admins, so a manager cannot raise its own budget or grant
 * itself what the organisation withheld.
 */
import { randomUUID } from 'node:crypto';
import { createWithSlug, slugFrom } from '../integrations/common.ts';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { invalidateSettings } from '../../policy/security-settings.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { ConfigRepository } from '../../store/configs.ts';
import type { WorkspaceRecord, WorkspaceStatus } from '../../store/entities.ts';
import { IdentityRepository, Member, memberKey, type MemberRecord } from '../../store/identity.ts';
import { memberView, type MemberView } from '../members/service.ts';
import { visibleWorkspace } from './access.ts';
import type { CreateWorkspaceBody, UpdateWorkspaceBody } from './schema.ts';

/** A refused delete names the workspace's key and config counts up to this. */
const COUNTED = 100;

const counted = (n: number, what: string): string => (n === 0 ? '' : `${n > COUNTED ? `more than ${COUNTED}` : String(n)} ${what}`);

export interface WorkspaceView {
  object: 'workspace';
  id: string;
  slug: string;
  name: string;
  description: string | null;
  status: WorkspaceStatus;
  defaults: Record<string, unknown> | null;
  usage_limits: unknown[];
  rate_limits: unknown[];
  /** Overrides of the organisation's security settings. */
  security_settings: Record<string, boolean>;
  created_at: string;
  last_updated_at: string;
  archived_at: string | null;
  users?: MemberView[];
}

export const workspaceView = (w: WorkspaceRecord): WorkspaceView => ({
  object: 'workspace',
  id: w.id,
  slug: w.slug,
  name: w.name,
  description: w.description,
  status: w.status,
  defaults: w.defaults,
  usage_limits: w.usage_limits ?? [],
  rate_limits: w.rate_limits ?? [],
  security_settings: w.security_settings ?? {},
  created_at: w.created_at,
  last_updated_at: w.last_updated_at,
  archived_at: w.archived_at ?? null,
});

/** Overrides after a change: `null` removes one. */
function mergeOverrides(current: Record<string, boolean> | null | undefined, change: Record<string, boolean | null | undefined>): Record<string, boolean> {
  const out: Record<string, boolean> = { ...current };
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete out[k];
    else if (v !== undefined) out[k] = v;
  }
  return out;
}

export type StatusFilter = ReadonlySet<WorkspaceStatus>;

export function parseStatusFilter(raw: string | null): StatusFilter {
  if (raw === null || raw.trim() === '') return new Set(['active']);
  const parts = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = parts.filter((p) => p !== 'active' && p !== 'archived');
  if (bad.length || parts.length === 0) throw ValidationError.field('status', 'must be a comma-separated list of active, archived');
  return new Set(parts as WorkspaceStatus[]);
}

export class WorkspaceService {
  readonly #deps: CoreDeps;
  readonly #identity: IdentityRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#identity = new IdentityRepository(deps.repos.table);
  }

  #now(): string {
    return new Date(this.#deps.clock.now()).toISOString();
  }

  async create(caller: Principal, body: CreateWorkspaceBody): Promise<WorkspaceView> {
    const now = this.#now();
    const ws: WorkspaceRecord = {
      id: randomUUID(),
      organisation_id: caller.organisationId,
      // A readable slug from the name; a suffix only when it is taken.
      slug: await createWithSlug(body.slug ?? slugFrom(body.name, 'workspace'), body.slug === undefined, async (slug) => {
        if (await this.#deps.repos.workspaces.resolve(caller.organisationId, slug))
          throw new ConflictError(`A workspace with slug "${slug}" already exists`, { param: 'slug' });
        return slug;
      }),
      name: body.name,
      description: body.description ?? null,
      status: 'active',
      defaults: body.defaults ?? null,
      created_at: now,
      last_updated_at: now,
      security_settings: mergeOverrides(null, body.security_settings ?? {}),
      usage_limits: body.usage_limits ?? null,
      rate_limits: body.rate_limits ?? null,
      archived_at: null,
      last_updated_by: caller.keyId,
    };
    const members: MemberRecord[] = [];
    for (const [i, userId] of [...new Set(body.users ?? [])].entries()) {
      if (!(await this.#identity.getUser(caller.organisationId, userId))) throw new NotFoundError(`User ${userId} not found`, { param: `users[${i}]` });
      members.push({ organisation_id: caller.organisationId, workspace_id: ws.id, user_id: userId, role: 'member', created_at: now, last_updated_at: now });
    }
    auditTarget(ws.id, ws.id);
    await this.#deps.repos.workspaces.create(
      ws,
      members.map((m) => Member.toItem(m)),
    );
    return workspaceView(ws);
  }

  async list(caller: Principal, query: URLSearchParams): Promise<WorkspaceRecord[]> {
    const statuses = parseStatusFilter(query.get('status'));
    if (statuses.has('archived') && !isOrganisationPrincipal(caller)) {
      throw new ForbiddenError('Only organisation owners and admins may list archived workspaces');
    }
    const name = query.get('name')?.toLowerCase();
    const exact = query.get('exact_name');
    const all = await this.#deps.repos.workspaces.list(caller.organisationId);
    return all.filter(
      (w) =>
        statuses.has(w.status) &&
        (isOrganisationPrincipal(caller) || w.id === caller.workspaceId) &&
        (name === undefined || w.name.toLowerCase().includes(name)) &&
        (exact === null || w.name === exact),
    );
  }

  async get(caller: Principal, idOrSlug: string): Promise<WorkspaceView> {
    const ws = await visibleWorkspace(this.#deps, caller, idOrSlug);
    const members = await this.#identity.listMembers(caller.organisationId, ws.id);
    const users = await Promise.all(members.map(async (m) => memberView(m, await this.#identity.getUser(caller.organisationId, m.user_id))));
    return { ...workspaceView(ws), users };
  }

  async update(caller: Principal, idOrSlug: string, body: UpdateWorkspaceBody): Promise<void> {
    const ws = await visibleWorkspace(this.#deps, caller, idOrSlug);
    const organisationOnly = (['usage_limits', 'rate_limits', 'security_settings', 'status'] as const).filter((f) => body[f] !== undefined);
    if (organisationOnly.length && !isOrganisationPrincipal(caller)) {
      throw new ForbiddenError(`Only organisation owners and admins may change ${organisationOnly.join(', ')} of a workspace`);
    }
    auditTarget(ws.id, ws.id);
    const now = this.#now();
    const next: WorkspaceRecord = {
      ...ws,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.defaults !== undefined ? { defaults: body.defaults } : {}),
      ...(body.usage_limits !== undefined ? { usage_limits: body.usage_limits } : {}),
      ...(body.rate_limits !== undefined ? { rate_limits: body.rate_limits } : {}),
      ...(body.security_settings !== undefined
        ? { security_settings: body.security_settings === null ? {} : mergeOverrides(ws.security_settings, body.security_settings) }
        : {}),
      ...(body.status !== undefined ? { status: body.status, archived_at: body.status === 'archived' ? (ws.archived_at ?? now) : null } : {}),
      last_updated_at: now,
      last_updated_by: caller.keyId,
    };
    await this.#deps.repos.workspaces.update(next);
    this.#changed();
  }

  /** Archived workspaces keep their data; their keys stop working until the workspace is restored. */
  async archive(caller: Principal, idOrSlug: string): Promise<void> {
    const ws = await visibleWorkspace(this.#deps, caller, idOrSlug);
    auditTarget(ws.id, ws.id);
    if (ws.status === 'archived') throw new ConflictError(`Workspace ${ws.slug} is already archived`);
    const now = this.#now();
    await this.#deps.repos.workspaces.update({ ...ws, status: 'archived', archived_at: now, last_updated_at: now, last_updated_by: caller.keyId });
    this.#changed();
  }

  /** Refused (409 AB07) while API keys or configs still belong to the workspace. */
  async delete(caller: Principal, idOrSlug: string): Promise<void> {
    const ws = await visibleWorkspace(this.#deps, caller, idOrSlug);
    auditTarget(ws.id, ws.id);
    const boot = await this.#deps.repos.bootstrap.get();
    if (boot?.workspace_id === ws.id) throw new ConflictError(`Workspace ${ws.slug} is the organisation's default workspace and cannot be deleted`);
    // Counted up to a cap: a workspace with a million keys (or configs) is refused after reading a hundred of them.
    const [keys, configs] = await Promise.all([
      this.#deps.repos.apiKeys.countInWorkspace(ws.id, COUNTED),
      new ConfigRepository(this.#deps.repos.table).countInWorkspace(ws.id, COUNTED),
    ]);
    if (keys || configs) {
      const what = [counted(keys, 'API key(s)'), counted(configs, 'config(s)')].filter(Boolean).join(' and ');
      throw new ConflictError(`Workspace ${ws.slug} still has ${what}: delete them first, or archive the workspace`);
    }
    const members = await this.#identity.listMembers(caller.organisationId, ws.id);
    await this.#deps.repos.workspaces.delete(
      ws,
      members.map((m) => memberKey(m.organisation_id, m.workspace_id, m.user_id)),
    );
    this.#changed();
  }

  #changed(): void {
    invalidateSettings(this.#deps);
    this.#deps.keyAuth.invalidateAll();
  }
}
