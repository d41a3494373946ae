/** Users and memberships written straight to the table (tests that need people without invites). */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import type { Principal } from '../../layers/core/src/kernel/principal.ts';
import { IdentityRepository, type OrganisationRole, type UserRecord, type WorkspaceRole } from '../../layers/core/src/store/identity.ts';

export interface NewUser {
  email?: string;
  role?: OrganisationRole;
  /** Workspace ids and the user's role in each. */
  workspaces?: { id: string; role: WorkspaceRole }[];
  id?: string;
}

export async function addUser(deps: CoreDeps, organisationId: string, u: NewUser = {}): Promise<UserRecord> {
  const identity = new IdentityRepository(deps.repos.table);
  const now = new Date(deps.clock.now()).toISOString();
  const id = u.id ?? randomUUID();
  const user: UserRecord = {
    id,
    organisation_id: organisationId,
    email: (u.email ?? `${id.slice(0, 8)}@example.com`).toLowerCase(),
    first_name: null,
    last_name: null,
    role: u.role ?? 'member',
    created_at: now,
    last_updated_at: now,
  };
  await deps.repos.table.transact(identity.userPuts(user));
  if (u.workspaces?.length) {
    await identity.addMembers(
      u.workspaces.map((w) => ({ organisation_id: organisationId, workspace_id: w.id, user_id: id, role: w.role, created_at: now, last_updated_at: now })),
    );
  }
  return user;
}

/** A workspace service key's principal (a manager), for tests that need no table behind it. */
export const workspacePrincipal = (over: Partial<Principal> = {}): Principal => ({
  kind: 'api-key',
  keyId: 'k1',
  organisationId: 'o1',
  workspaceId: 'w1',
  userId: null,
  email: null,
  keyType: 'workspace-service',
  role: 'manager',
  owner: false,
  scopes: new Set(['completions.write']),
  defaults: null,
  limits: null,
  ...over,
});
