/**
 * Deleting a config checks for keys that pin it (by id or slug) through the keys-by-config index:
 * among 300 other keys, the delete reads the keys that pin it, and it is refused while there are.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyService } from '../../../../../layers/core/src/admin/api-keys/service.ts';
import { createConfigSchema } from '../../../../../layers/core/src/admin/configs/schema.ts';
import { ConfigService } from '../../../../../layers/core/src/admin/configs/service.ts';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { ConflictError } from '../../../../../layers/core/src/http/errors.ts';
import type { ApiKeyRecord } from '../../../../../layers/core/src/store/entities.ts';
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

const pinned = (configId: string, name: string): ApiKeyRecord => ({
  ...keyRecord({ organisation_id: org, workspace_id: ws, name }, t0).record,
  defaults: { config_id: configId },
});

describe('config delete', () => {
  it('is refused while keys pin the config, and then goes, reading only those keys', async () => {
    const owner = ownerPrincipal(org);
    const configs = new ConfigService(deps);
    const body = (name: string) => createConfigSchema.parse({ name, workspace_id: ws, config: { provider: 'openai' } });
    const doomed = await configs.create(owner, body('Doomed'));
    const kept = await configs.create(owner, body('Kept'));
    const unrelated = [
      ...Array.from({ length: 150 }, (_, i) => pinned(kept.id, `kept-${i}`)),
      ...Array.from({ length: 150 }, () => keyRecord({ organisation_id: org, workspace_id: ws }, t0).record),
    ];
    await seedKeys(deps, unrelated);
    const byId = pinned(doomed.id, 'by-id');
    const bySlug = pinned(doomed.slug, 'by-slug');
    for (const k of [byId, bySlug]) await deps.repos.apiKeys.create(k);

    const refused = await countReads(deps.repos.table.doc, () => configs.delete(owner, doomed.id).catch((e: unknown) => e));
    expect(refused.result).toBeInstanceOf(ConflictError);
    expect((refused.result as ConflictError).message).toMatch(/default config of 2 API key\(s\) \((by-id, by-slug|by-slug, by-id)\)/);
    // The config (slug, then id), the index marker, its two entries and two key records.
    expect(refused.reads.items).toBeLessThanOrEqual(2 * 2 + 4);

    const keys = new ApiKeyService(deps);
    for (const k of [byId, bySlug]) await keys.update(owner, k.id, { defaults: { config_id: kept.slug } });
    const deleted = await countReads(deps.repos.table.doc, () => configs.delete(owner, doomed.id));
    // As above without keys, and the config's one version.
    expect(deleted.reads.items).toBeLessThanOrEqual(5);
    expect(await configs.get(owner, doomed.id).catch((e: unknown) => e)).toMatchObject({ status: 404 });
    expect((await deps.repos.apiKeys.listByConfig(org, [kept.id, kept.slug])).length).toBe(152);
  });
});
