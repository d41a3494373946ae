/**
 * Deleting a workspace reads what belongs to it, never the organisation's keys: an empty workspace
 * among 300 keys is deleted reading a handful of items, and a workspace with many keys is refused
 * after reading at most a hundred of them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createWorkspaceSchema } from '../../../../../layers/core/src/admin/workspaces/schema.ts';
import { WorkspaceService } from '../../../../../layers/core/src/admin/workspaces/service.ts';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { ConflictError } from '../../../../../layers/core/src/http/errors.ts';
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
});
