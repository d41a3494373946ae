/**
 * Deleting a user removes their user keys by reading those keys (the keys-by-user index), not every
 * key of the organisation: among 300 other keys, the delete reads about what it deletes.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { UserService } from '../../../../../layers/core/src/admin/users/service.ts';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { IdentityRepository, type UserRecord } from '../../../../../layers/core/src/store/identity.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { keyRecord } from '../../../../support/records.ts';
import { countReads, ownerPrincipal, seedKeys } from '../../../../support/table-reads.ts';

const t0 = Date.UTC(2026, 0, 1);
let deps: CoreDeps;
let org: string;
let ws: string;

beforeAll(async () => {
  deps = await createTestDeps();
  ({ organisationId: org, workspaceId: ws } = await ensureBootstrap(deps));
});

async function addUser(email: string): Promise<UserRecord> {
  const identity = new IdentityRepository(deps.repos.table);
  const now = new Date(t0).toISOString();
  const user: UserRecord = {
    id: randomUUID(),
    organisation_id: org,
    email,
    first_name: null,
    last_name: null,
    role: 'member',
    created_at: now,
    last_updated_at: now,
  };
  await deps.repos.table.transact(identity.userPuts(user));
  await identity.addMembers([{ organisation_id: org, workspace_id: ws, user_id: user.id, role: 'member', created_at: now, last_updated_at: now }]);
  return user;
}

const userKey = (userId: string) => keyRecord({ organisation_id: org, workspace_id: ws, type: 'workspace-user', user_id: userId }, t0).record;

describe('user delete', () => {
  it("removes the user's keys, reading those keys and not the organisation's 300 others", async () => {
    const dana = await addUser('dana@example.com');
    const other = await addUser('other@example.com');
    const unrelated = [
      ...Array.from({ length: 200 }, () => keyRecord({ organisation_id: org, workspace_id: ws }, t0).record),
      ...Array.from({ length: 100 }, () => userKey(other.id)),
    ];
    await seedKeys(deps, unrelated);
    const danas = [userKey(dana.id), userKey(dana.id), userKey(dana.id)];
    for (const k of danas) await deps.repos.apiKeys.create(k);

    const { reads } = await countReads(deps.repos.table.doc, () => new UserService(deps).delete(ownerPrincipal(org), dana.id));
    // The user, the workspaces and the user's membership in each, the index marker, then the
    // user's three key entries and records.
    expect(reads.items).toBeLessThanOrEqual(2 * danas.length + 6);

    for (const k of danas) expect(await deps.repos.apiKeys.getById(org, k.id)).toBeUndefined();
    const left = await deps.repos.apiKeys.list(org);
    expect(left).toHaveLength(unrelated.length + 1);
    expect(left.filter((k) => k.user_id === other.id)).toHaveLength(100);
    expect(await new IdentityRepository(deps.repos.table).getMember(org, ws, dana.id)).toBeUndefined();
    expect(await new IdentityRepository(deps.repos.table).getMember(org, ws, other.id)).toBeDefined();
  });
});
