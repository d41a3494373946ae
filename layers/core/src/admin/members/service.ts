/**
 * Workspace members: users of the organisation with a role in one workspace (manager or member).
 * Owners and admins manage members of every workspace, managers those of their own. A change
 * applies to the member's user keys at once in this process (their role is read on authentication).
 */
import type { CoreDeps } from '../../deps.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { IdentityRepository, type MemberRecord, type UserRecord, type WorkspaceRole } from '../../store/identity.ts';
import { visibleWorkspace } from '../workspaces/access.ts';
import type { AddMembersBody, UpdateMemberBody } from './schema.ts';

export interface MemberView {
  object: 'workspace-user';
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  org_role: string | null;
  role: WorkspaceRole;
  status: 'active';
  workspace_id: string;
  created_at: string;
  last_updated_at: string;
}

export const memberView = (m: MemberRecord, user: UserRecord | undefined): MemberView => ({
  object: 'workspace-user',
  id: m.user_id,
  email: user?.email ?? null,
  first_name: user?.first_name ?? null,
  last_name: user?.last_name ?? null,
  org_role: user?.role ?? null,
  role: m.role,
  status: 'active',
  workspace_id: m.workspace_id,
  created_at: m.created_at,
  last_updated_at: m.last_updated_at,
});

export class MemberService {
  readonly #deps: CoreDeps;
  readonly #identity: IdentityRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#identity = new IdentityRepository(deps.repos.table);
  }

  async add(caller: Principal, workspace: string, body: AddMembersBody): Promise<void> {
    const ws = await visibleWorkspace(this.#deps, caller, workspace);
    auditTarget(ws.id, ws.id);
    const now = new Date(this.#deps.clock.now()).toISOString();
    const seen = new Set<string>();
    const members: MemberRecord[] = [];
    for (const [i, u] of body.users.entries()) {
      if (seen.has(u.id)) throw ValidationError.field(`users[${i}].id`, `${u.id} is listed twice`);
      seen.add(u.id);
      if (!(await this.#identity.getUser(caller.organisationId, u.id))) throw new NotFoundError(`User ${u.id} not found`, { param: `users[${i}].id` });
      members.push({ organisation_id: caller.organisationId, workspace_id: ws.id, user_id: u.id, role: u.role, created_at: now, last_updated_at: now });
    }
    await this.#identity.addMembers(members);
    this.#deps.keyAuth.invalidateAll();
  }

  async list(caller: Principal, workspace: string, query: URLSearchParams): Promise<MemberView[]> {
    const ws = await visibleWorkspace(this.#deps, caller, workspace);
    const role = query.get('role');
    if (role !== null && role !== 'manager' && role !== 'member' && role !== 'admin') throw ValidationError.field('role', 'must be manager or member');
    const email = query.get('email')?.toLowerCase();
    const members = await this.#identity.listMembers(caller.organisationId, ws.id);
    const views = await Promise.all(members.map(async (m) => memberView(m, await this.#identity.getUser(caller.organisationId, m.user_id))));
    return views
      .filter((v) => (role === null || v.role === (role === 'admin' ? 'manager' : role)) && (email === undefined || (v.email ?? '').includes(email)))
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  async #member(caller: Principal, workspace: string, userId: string): Promise<MemberRecord> {
    const ws = await visibleWorkspace(this.#deps, caller, workspace);
    const m = await this.#identity.getMember(caller.organisationId, ws.id, userId);
    if (!m) throw new NotFoundError(`User ${userId} is not a member of workspace ${workspace}`);
    auditTarget(userId, ws.id);
    return m;
  }

  async get(caller: Principal, workspace: string, userId: string): Promise<MemberView> {
    const m = await this.#member(caller, workspace, userId);
    return memberView(m, await this.#identity.getUser(caller.organisationId, userId));
  }

  async update(caller: Principal, workspace: string, userId: string, body: UpdateMemberBody): Promise<void> {
    const m = await this.#member(caller, workspace, userId);
    await this.#identity.updateMember({ ...m, role: body.role, last_updated_at: new Date(this.#deps.clock.now()).toISOString() });
    this.#deps.keyAuth.invalidateAll();
  }

  async remove(caller: Principal, workspace: string, userId: string): Promise<void> {
    const m = await this.#member(caller, workspace, userId);
    await this.#identity.removeMember(m);
    this.#deps.keyAuth.invalidateAll();
  }
}
