/**
 * Integration, provider and virtual key repositories against DynamoDB Local: the item layout,
 * slug uniqueness without half-written items, and the provider counter that makes "delete an
 * integration in use" fail exactly, even when a provider is created at the same moment.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ConflictError, NotFoundError } from '../../../../layers/core/src/http/errors.ts';
import { IntegrationRepository, ProviderRepository, type IntegrationRecord, type ProviderRecord } from '../../../../layers/core/src/store/integrations.ts';
import { VirtualKeyRepository, type VirtualKeyRecord } from '../../../../layers/core/src/store/virtual-keys.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { scanTable } from '../../../support/records.ts';

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );
const AT = '2026-01-01T00:00:00.000Z';

function integration(org: string, slug: string, over: Partial<IntegrationRecord> = {}): IntegrationRecord {
  return {
    id: randomUUID(),
    organisation_id: org,
    slug,
    name: `Integration ${slug}`,
    description: null,
    ai_provider_id: 'openai',
    status: 'active',
    secret: 'gl1.ciphertext',
    masked_key: 'sk-a****wxyz',
    configurations: {},
    masked_configurations: {},
    tags: { env: 'test' },
    workspace_ids: null,
    allowed_models: [],
    created_at: AT,
    last_updated_at: AT,
    created_by: null,
    last_updated_by: null,
    ...over,
  };
}

function provider(org: string, ws: string, integrationId: string, slug: string): ProviderRecord {
  return {
    id: randomUUID(),
    organisation_id: org,
    workspace_id: ws,
    slug,
    name: `Provider ${slug}`,
    integration_id: integrationId,
    note: null,
    expires_at: null,
    created_at: AT,
    last_updated_at: AT,
    created_by: null,
    last_updated_by: null,
  };
}

describe('integrations and providers', () => {
  let deps: CoreDeps;
  let integrations: IntegrationRepository;
  let providers: ProviderRepository;
  const org = randomUUID();
  const wsA = randomUUID();
  const wsB = randomUUID();

  beforeAll(async () => {
    deps = await createTestDeps();
    integrations = new IntegrationRepository(deps.repos.table);
    providers = new ProviderRepository(deps.repos.table);
  });

  const itemsOf = async (id: string) => (await scanTable(deps.repos.table)).filter((i) => JSON.stringify(i).includes(id));

  it('stores the integration, its slug claim and its counter, and reads it by id and slug', async () => {
    const rec = integration(org, 'alpha');
    await integrations.create(rec);
    expect(await integrations.getById(org, rec.id)).toEqual(rec);
    expect(await integrations.resolve(org, 'alpha')).toEqual(rec);
    expect(await integrations.resolve(org, rec.id)).toEqual(rec);
    expect(await integrations.resolve(randomUUID(), 'alpha')).toBeUndefined();
    expect(await integrations.providerCount(org, rec.id)).toBe(0);
    const items = await itemsOf(rec.id);
    expect(items.map((i) => [i.sk, i._type]).sort()).toEqual([
      [`INTEGRATION#${rec.id}`, 'Integration'],
      [`INTEGRATIONSLUG#alpha`, 'IntegrationSlug'],
      [`INTEGRATIONUSE#${rec.id}`, 'IntegrationUse'],
    ]);
  });

  it('refuses a taken slug naming it, and writes nothing', async () => {
    await integrations.create(integration(org, 'taken'));
    const second = integration(org, 'taken');
    const err = await rejection(integrations.create(second));
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).param).toBe('slug');
    expect(await itemsOf(second.id)).toEqual([]);
  });

  it('creates default providers with the integration, or nothing when one slug is taken', async () => {
    const first = integration(org, 'with-defaults');
    await integrations.create(first, [provider(org, wsA, first.id, 'shared'), provider(org, wsB, first.id, 'shared')]);
    expect(await integrations.providerCount(org, first.id)).toBe(2);
    expect((await providers.list(org, wsA)).map((p) => p.slug)).toContain('shared');

    const second = integration(org, 'clashing-defaults');
    const err = await rejection(integrations.create(second, [provider(org, randomUUID(), second.id, 'shared'), provider(org, wsB, second.id, 'shared')]));
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).param).toBe('default_provider_slug');
    expect((err as Error).message).toContain(wsB);
    expect(await itemsOf(second.id)).toEqual([]);
  });

  it('counts providers, keeps slugs unique per workspace, and refuses providers of a missing integration', async () => {
    const rec = integration(org, 'counted');
    await integrations.create(rec);
    const p1 = provider(org, wsA, rec.id, 'counted');
    await providers.create(p1);
    await providers.create(provider(org, wsB, rec.id, 'counted'));
    expect(await integrations.providerCount(org, rec.id)).toBe(2);
    expect(await providers.get(org, wsA, 'counted')).toEqual(p1);
    expect(await providers.get(org, randomUUID(), 'counted')).toBeUndefined();

    const dup = await rejection(providers.create(provider(org, wsA, rec.id, 'counted')));
    expect(dup).toBeInstanceOf(ConflictError);
    expect((dup as ConflictError).param).toBe('slug');
    expect(await integrations.providerCount(org, rec.id)).toBe(2);

    const orphan = provider(org, wsA, randomUUID(), 'orphan');
    const missing = await rejection(providers.create(orphan));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(await providers.get(org, wsA, 'orphan', true)).toBeUndefined();

    expect((await providers.byIntegration(rec.id)).map((p) => p.workspace_id).sort()).toEqual([wsA, wsB].sort());
    await providers.delete(p1);
    expect(await integrations.providerCount(org, rec.id)).toBe(1);
    expect(await rejection(providers.delete(p1))).toBeInstanceOf(NotFoundError);
    expect(await integrations.providerCount(org, rec.id)).toBe(1);
  });

  it('refuses to delete an integration while a provider uses it, and deletes every item after', async () => {
    const rec = integration(org, 'in-use');
    await integrations.create(rec);
    const p = provider(org, wsA, rec.id, 'in-use');
    await providers.create(p);
    expect(await rejection(integrations.delete(rec))).toBeInstanceOf(ConflictError);
    expect(await integrations.getById(org, rec.id)).toEqual(rec);
    await providers.delete(p);
    await integrations.delete(rec);
    expect(await itemsOf(rec.id)).toEqual([]);
    expect(await integrations.resolve(org, 'in-use')).toBeUndefined();
  });

  it('never leaves a provider on a deleted integration when both happen at once', async () => {
    for (let i = 0; i < 8; i++) {
      const rec = integration(org, `race-${i}`);
      await integrations.create(rec);
      await Promise.allSettled([providers.create(provider(org, wsA, rec.id, `race-${i}`)), integrations.delete(rec)]);
      const left = await providers.get(org, wsA, `race-${i}`, true);
      const stillThere = await integrations.getById(org, rec.id);
      if (left) expect(stillThere).toBeDefined();
      if (stillThere) expect(await integrations.providerCount(org, rec.id)).toBe(left ? 1 : 0);
    }
  });

  it('lists an organisation oldest first, and providers per workspace or for all', async () => {
    const other = randomUUID();
    const a = integration(other, 'a', { created_at: '2026-01-02T00:00:00.000Z' });
    const b = integration(other, 'b', { created_at: '2026-01-01T00:00:00.000Z' });
    await integrations.create(a);
    await integrations.create(b);
    expect((await integrations.list(other)).map((r) => r.slug)).toEqual(['b', 'a']);
    await providers.create(provider(other, wsA, a.id, 'x'));
    await providers.create(provider(other, wsB, a.id, 'y'));
    expect((await providers.list(other, wsA)).map((p) => p.slug)).toEqual(['x']);
    expect((await providers.list(other)).map((p) => p.slug).sort()).toEqual(['x', 'y']);
  });

  it('updates an integration only while it exists', async () => {
    const rec = integration(org, 'updated');
    await integrations.create(rec);
    await integrations.update({ ...rec, name: 'renamed' });
    expect((await integrations.getById(org, rec.id))?.name).toBe('renamed');
    expect(await rejection(integrations.update(integration(org, 'ghost')))).toBeInstanceOf(NotFoundError);
  });
});

describe('virtual keys', () => {
  let deps: CoreDeps;
  let repo: VirtualKeyRepository;
  const org = randomUUID();
  const ws = randomUUID();

  beforeAll(async () => {
    deps = await createTestDeps();
    repo = new VirtualKeyRepository(deps.repos.table);
  });

  const vk = (slug: string, workspace = ws): VirtualKeyRecord => ({
    id: randomUUID(),
    organisation_id: org,
    workspace_id: workspace,
    slug,
    name: slug,
    provider: 'openai',
    note: null,
    secret: 'gl1.x',
    masked_key: null,
    configurations: {},
    masked_configurations: {},
    expires_at: null,
    created_at: AT,
    last_updated_at: AT,
    created_by: null,
    last_updated_by: null,
  });

  it('stores, reads, lists, updates and deletes one per workspace slug', async () => {
    const rec = vk('legacy');
    await repo.create(rec);
    expect(await repo.get(org, ws, 'legacy')).toEqual(rec);
    const dup = await rejection(repo.create(vk('legacy')));
    expect(dup).toBeInstanceOf(ConflictError);
    await repo.create(vk('legacy', randomUUID()));
    expect((await repo.list(org, ws)).map((v) => v.id)).toEqual([rec.id]);
    expect(await repo.list(org)).toHaveLength(2);
    await repo.update({ ...rec, note: 'n' });
    expect((await repo.get(org, ws, 'legacy', true))?.note).toBe('n');
    await repo.delete(rec);
    expect(await repo.get(org, ws, 'legacy', true)).toBeUndefined();
    expect(await rejection(repo.delete(rec))).toBeInstanceOf(NotFoundError);
    expect(await rejection(repo.update(rec))).toBeInstanceOf(NotFoundError);
  });
});
