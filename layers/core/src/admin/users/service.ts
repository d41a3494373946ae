/**
 * Users of the organisation (they join through invites). Owners and admins list, change and
 * remove them; only owners give or take the owner role. Removing a user removes their memberships
 * and their user keys.
 */
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { IdentityRepository, type MemberRecord, type UserRecord } from '../../store/identity.ts';
import type { UpdateUserBody } from './schema.ts';

export interface UserView {
  object: 'user';
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  role: UserRecord['role'];
  created_at: string;
  last_updated_at: string;
  workspace_ids: string[];
  workspaces: { id: string; role: string }[];
}

export const userView = (u: UserRecord, memberships: readonly MemberRecord[]): UserView => ({
  object: 'user',
  id: u.id,
  email: u.email,
  first_name: u.first_name,
  last_name: u.last_name,
  role: u.role,
  created_at: u.created_at,
  last_updated_at: u.last_updated_at,
  workspace_ids: memberships.map((m) => m.workspace_id),
  workspaces: memberships.map((m) => ({ id: m.workspace_id, role: m.role })),
});

export class UserService {
  readonly #deps: CoreDeps;
  readonly #identity: IdentityRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#identity = new IdentityRepository(deps.repos.table);
  }

  /** Every membership of the organisation, by user (consistent, unlike the per-user index). */
  async #memberships(orgId: string): Promise<Map<string, MemberRecord[]>> {
    const out = new Map<string, MemberRecord[]>();
    for (const ws of await this.#deps.repos.workspaces.list(orgId)) {
      for (const m of await this.#identity.listMembers(orgId, ws.id)) out.set(m.user_id, [...(out.get(m.user_id) ?? []), m]);
    }
    return out;
  }

  async list(caller: Principal, query: URLSearchParams): Promise<UserView[]> {
    const role = query.get('role');
    if (role !== null && role !== 'owner' && role !== 'admin' && role !== 'member') throw ValidationError.field('role', 'must be owner, admin or member');
    const email = query.get('email')?.toLowerCase();
    const [users, memberships] = await Promise.all([this.#identity.listUsers(caller.organisationId), this.#memberships(caller.organisationId)]);
    return users
      .filter((u) => (role === null || u.role === role) && (email === undefined || u.email.includes(email)))
      .map((u) => userView(u, memberships.get(u.id) ?? []));
  }

  async #user(caller: Principal, id: string): Promise<UserRecord> {
    const user = await this.#identity.getUser(caller.organisationId, id);
    if (!user) throw new NotFoundError(`User ${id} not found`);
    auditTarget(user.id, null);
    return user;
  }

  async get(caller: Principal, id: string): Promise<UserView> {
    const user = await this.#user(caller, id);
    return userView(user, (await this.#memberships(caller.organisationId)).get(user.id) ?? []);
  }

  async update(caller: Principal, id: string, body: UpdateUserBody): Promise<void> {
    const user = await this.#user(caller, id);
    if (body.role !== undefined && body.role !== user.role && (body.role === 'owner' || user.role === 'owner') && caller.role !== 'owner') {
      throw new ForbiddenError('Only organisation owners may give or take the owner role');
    }
    await this.#identity.updateUser({
      ...user,
      ...(body.role !== undefined ? { role: body.role } : {}),
      ...(body.first_name !== undefined ? { first_name: body.first_name } : {}),
      ...(body.last_name !== undefined ? { last_name: body.last_name } : {}),
      last_updated_at: new Date(this.#deps.clock.now()).toISOString(),
    });
    this.#deps.keyAuth.invalidateAll();
  }

  async delete(caller: Principal, id: string): Promise<void> {
    const user = await this.#user(caller, id);
    if (user.role === 'owner' && caller.role !== 'owner') throw new ForbiddenError('Only organisation owners may remove an owner');
    if (caller.userId === user.id) throw new ForbiddenError('You cannot remove yourself');
    await this.#identity.deleteUser(user, await this.#membershipsOf(caller.organisationId, user.id));
    this.#deps.keyAuth.invalidateAll();
    // The user's keys already fail (no membership); removing them keeps the key list clean.
    for (const key of await this.#deps.repos.apiKeys.listByUser(caller.organisationId, user.id)) {
      if (key.type === 'workspace-user' && key.user_id === user.id) await this.#deps.repos.apiKeys.delete(key);
    }
  }

  /** One user's memberships, read consistently one workspace at a time (not every member's). */
  async #membershipsOf(orgId: string, userId: string): Promise<MemberRecord[]> {
    const workspaces = await this.#deps.repos.workspaces.list(orgId);
    const found = await Promise.all(workspaces.map((ws) => this.#identity.getMember(orgId, ws.id, userId)));
    return found.filter((m) => m !== undefined);
  }
}
