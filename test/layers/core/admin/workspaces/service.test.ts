/**
 * Deleting a workspace reads what belongs to it, never the organisation's keys, configs or members:
 * an empty workspace among 300 keys is deleted reading a handful of items, one with three members
 * beside a workspace of 2,000 configs and 500 members reads those three (one with 150 members, more
 * than a transaction holds, is deleted too), and a workspace with many keys or configs is refused
 * after reading at most a hundred and one of them.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createWorkspaceSchema } from '../../../../../layers/core/src/admin/workspaces/schema.ts';
import { WorkspaceService } from '../../../../../layers/core/src/admin/workspaces/service.ts';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { ConflictError } from '../../../../../layers/core/src/http/errors.ts';
import { SavedConfig, type SavedConfigRecord } from '../../../../../layers/core/src/store/configs.ts';
import { IdentityRepository, Member } from '../../../../../layers/core/src/store/identity.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { keyRecord } from '../../../../support/records.ts';
import { countReads, ownerPrincipal, seedKeys } from '../../../../support/table-reads.ts';

const t0 = Date.UTC(2026, 0, 1);
let deps: CoreDeps;
let org: string;
let ws: string;

/** Writes items 25 a request, eight requests at a time. */
async function put(items: readonly Record<string, unknown>[]): Promise<void> {
  const { doc, tableName } = deps.repos.table;
  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  for (let i = 0; i < batches.length; i += 8) {
    await Promise.all(
      batches.slice(i, i + 8).map(async (batch) => {
        let requests = batch.map((Item) => ({ PutRequest: { Item } }));
        while (requests.length) {
          const out = await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
          requests = (out.UnprocessedItems?.[tableName] ?? []) as typeof requests;
        }
      }),
    );
  }
}

const configItems = (workspaceId: string, n: number) =>
  Array.from({ length: n }, (_, i) => {
    const at = new Date(t0 + i).toISOString();
    const id = `${workspaceId}-cfg-${i}`;
    const rec: SavedConfigRecord = {
      id,
      slug: id,
      name: `Config ${i}`,
      organisation_id: org,
      workspace_id: workspaceId,
      status: 'active',
      is_default: false,
      version: 1,
      version_id: `v-${i}`,
      config: { strategy: { mode: 'single' } },
      created_at: at,
      last_updated_at: at,
      created_by: null,
      last_updated_by: null,
    };
    return SavedConfig.toItem(rec);
  });

const memberItems = (workspaceId: string, n: number) =>
  Array.from({ length: n }, (_, i) => {
    const at = new Date(t0).toISOString();
    return Member.toItem({
      organisation_id: org,
      workspace_id: workspaceId,
      user_id: `${workspaceId}-user-${i}`,
      role: 'member',
      created_at: at,
      last_updated_at: at,
    });
  });

beforeAll(async () => {
  deps = await createTestDeps();
  ({ organisationId: org, workspaceId: ws } = await ensureBootstrap(deps));
  await seedKeys(
    deps,
    Array.from({ length: 300 }, () => keyRecord({ organisation_id: org, workspace_id: ws }, t0).record),
  );
});

describe('workspace delete', () => {
  const owner = () => ownerPrincipal(org);
  const create = (name: string) => new WorkspaceService(deps).create(owner(), createWorkspaceSchema.parse({ name }));

  it('deletes an empty workspace reading a handful of items', async () => {
    const empty = await create('Empty');
    const { reads } = await countReads(deps.repos.table.doc, () => new WorkspaceService(deps).delete(owner(), empty.id));
    expect(reads.items).toBeLessThanOrEqual(5);
    expect(await deps.repos.workspaces.getById(org, empty.id)).toBeUndefined();
  });

  it('is refused while keys belong to it, reading at most a hundred and one of them', async () => {
    const busy = await create('Busy');
    await seedKeys(
      deps,
      Array.from({ length: 150 }, () => keyRecord({ organisation_id: org, workspace_id: busy.id }, t0).record),
    );
    const { result, reads } = await countReads(deps.repos.table.doc, () => new WorkspaceService(deps).delete(owner(), busy.id).catch((e: unknown) => e));
    expect(result).toBeInstanceOf(ConflictError);
    expect((result as ConflictError).message).toContain('still has more than 100 API key(s)');
    expect(reads.items).toBeLessThanOrEqual(101 + 5);
    expect(await deps.repos.workspaces.getById(org, busy.id)).toBeDefined();
  });

  describe('beside a workspace of 2,000 configs and 500 members', () => {
    beforeAll(async () => {
      const crowded = await create('Crowded');
      await put([...configItems(crowded.id, 2_000), ...memberItems(crowded.id, 500)]);
    });

    it('deletes a workspace with three members reading those three and a handful more', async () => {
      const small = await create('Small');
      await put(memberItems(small.id, 3));
      const { reads } = await countReads(deps.repos.table.doc, () => new WorkspaceService(deps).delete(owner(), small.id));
      expect(reads.items).toBeLessThanOrEqual(3 + 5);
      expect(await deps.repos.workspaces.getById(org, small.id)).toBeUndefined();
      expect(await new IdentityRepository(deps.repos.table).listMembers(org, small.id)).toEqual([]);
    });

    it('deletes a workspace with 150 members, more than one transaction holds, removing every membership', async () => {
      const team = await create('Big team');
      await put(memberItems(team.id, 150));
      const { reads } = await countReads(deps.repos.table.doc, () => new WorkspaceService(deps).delete(owner(), team.id));
      expect(reads.items).toBeLessThanOrEqual(150 + 5);
      expect(await deps.repos.workspaces.getById(org, team.id)).toBeUndefined();
      expect(await new IdentityRepository(deps.repos.table).listMembers(org, team.id)).toEqual([]);
    });

    it('is refused while three configs belong to it, reading those three and a handful more', async () => {
      const three = await create('Three configs');
      await put(configItems(three.id, 3));
      const { result, reads } = await countReads(deps.repos.table.doc, () => new WorkspaceService(deps).delete(owner(), three.id).catch((e: unknown) => e));
      expect(result).toBeInstanceOf(ConflictError);
      expect((result as ConflictError).message).toContain('still has 3 config(s)');
      expect(reads.items).toBeLessThanOrEqual(3 + 5);
      expect(await deps.repos.workspaces.getById(org, three.id)).toBeDefined();
    });

    it('is refused while 2,000 configs belong to it, reading at most a hundred and one of them', async () => {
      const many = await create('Many configs');
      await put(configItems(many.id, 2_000));
      const { result, reads } = await countReads(deps.repos.table.doc, () => new WorkspaceService(deps).delete(owner(), many.id).catch((e: unknown) => e));
      expect(result).toBeInstanceOf(ConflictError);
      expect((result as ConflictError).message).toContain('still has more than 100 config(s)');
      expect(reads.items).toBeLessThanOrEqual(101 + 5);
      expect(await deps.repos.workspaces.getById(org, many.id)).toBeDefined();
    });
  });
});
