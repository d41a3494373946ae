/**
 * Secret references against DynamoDB Local: a reference cannot be deleted while an integration maps
 * it, even when the mapping is written between the delete's check and the delete itself.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ConflictError } from '../../../../layers/core/src/http/errors.ts';
import { IntegrationRepository, type IntegrationRecord } from '../../../../layers/core/src/store/integrations.ts';
import { SecretReferenceRepository, type SecretReferenceRecord } from '../../../../layers/core/src/store/secret-references.ts';
import { createTestDeps } from '../../../support/deps.ts';

const AT = '2026-01-01T00:00:00.000Z';
const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

function reference(org: string, slug: string): SecretReferenceRecord {
  return {
    id: randomUUID(),
    organisation_id: org,
    slug,
    name: slug,
    description: null,
    manager_type: 'aws_sm',
    auth_plain: { aws_region: 'eu-west-1' },
    auth_secret: null,
    masked_auth: {},
    secret_path: `prod/${slug}`,
    secret_key: null,
    allow_all_workspaces: true,
    allowed_workspaces: [],
    tags: null,
    status: 'ACTIVE',
    version: 1,
    created_by: null,
    created_at: AT,
    last_updated_at: AT,
  };
}

function mappingIntegration(org: string, slug: string, referenceId: string): IntegrationRecord {
  return {
    id: randomUUID(),
    organisation_id: org,
    slug,
    name: slug,
    description: null,
    ai_provider_id: 'openai',
    status: 'active',
    secret: null,
    masked_key: null,
    configurations: {},
    masked_configurations: {},
    tags: {},
    workspace_ids: null,
    allowed_models: [],
    secret_mappings: [{ target_field: 'key', secret_reference_id: referenceId }],
    created_at: AT,
    last_updated_at: AT,
    created_by: null,
    last_updated_by: null,
  } as IntegrationRecord;
}

describe('secret reference deletion against concurrent mappings', () => {
  let deps: CoreDeps;
  let refs: SecretReferenceRepository;
  let integrations: IntegrationRepository;
  const org = randomUUID();

  beforeAll(async () => {
    deps = await createTestDeps();
    refs = new SecretReferenceRepository(deps.repos.table);
    integrations = new IntegrationRepository(deps.repos.table);
  });

  /** What the admin service does: read, check that no integration maps it, delete what was read. */
  async function checkedDelete(slug: string): Promise<void> {
    const rec = await refs.resolve(org, slug);
    if (!rec) throw new Error(`${slug} missing`);
    const mapped = (await integrations.list(org)).some((i) => (i.secret_mappings ?? []).some((m) => m.secret_reference_id === rec.id));
    if (mapped) throw new ConflictError('mapped');
    await refs.delete(rec);
  }

  it('refuses a delete whose read predates a new mapping, and keeps the reference', async () => {
    const ref = reference(org, 'stale-read');
    await refs.create(ref);
    const read = await refs.resolve(org, 'stale-read');
    await integrations.create(mappingIntegration(org, 'maps-stale-read', ref.id));

    const err = await rejection(refs.delete(read!));
    expect(err).toBeInstanceOf(ConflictError);
    expect(await refs.resolve(org, 'stale-read')).toMatchObject({ id: ref.id, mapping_epoch: 1 });
  });

  it('refuses to create or update an integration mapping a deleted reference, writing nothing', async () => {
    const ref = reference(org, 'gone');
    await refs.create(ref);
    await refs.delete((await refs.resolve(org, 'gone'))!);

    const created = mappingIntegration(org, 'maps-gone', ref.id);
    const err = await rejection(integrations.create(created));
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).param).toBe('secret_mappings');
    expect(await integrations.resolve(org, 'maps-gone')).toBeUndefined();

    const plain = { ...mappingIntegration(org, 'plain', ref.id), secret_mappings: [] };
    await integrations.create(plain);
    const updateErr = await rejection(integrations.update({ ...plain, secret_mappings: created.secret_mappings }));
    expect((updateErr as ConflictError).param).toBe('secret_mappings');
    expect((await integrations.resolve(org, 'plain'))?.secret_mappings).toEqual([]);
  });

  it('deletes a reference read after its last change, with its slug claim', async () => {
    const ref = reference(org, 'free');
    await refs.create(ref);
    await checkedDelete('free');
    expect(await refs.resolve(org, 'free')).toBeUndefined();
    expect(await refs.resolve(org, ref.id)).toBeUndefined();
  });

  it('never leaves a mapping to a deleted reference when a delete and a mapping race', async () => {
    for (let round = 0; round < 12; round++) {
      const ref = reference(org, `race-${round}`);
      await refs.create(ref);
      const mapping = mappingIntegration(org, `race-map-${round}`, ref.id);
      const [deleted, mapped] = await Promise.allSettled([checkedDelete(ref.slug), integrations.create(mapping)]);
      const refLeft = await refs.resolve(org, ref.id);
      const integrationLeft = await integrations.resolve(org, mapping.slug);
      // Exactly one side wins: the reference survives with its mapping, or it is gone with no mapping.
      expect(deleted.status === 'fulfilled').toBe(refLeft === undefined);
      expect(mapped.status === 'fulfilled').toBe(integrationLeft !== undefined);
      expect(refLeft === undefined && integrationLeft !== undefined).toBe(false);
    }
  });
});
