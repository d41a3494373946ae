/**
 * Integration and virtual key services on DynamoDB Local: what is stored (ciphertext bound to its
 * record), what is shown (masks), who may act, default providers, and the legacy Azure fields.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { integrationContext, openCredentials } from '../../../../../layers/core/src/store/credentials.ts';
import { IntegrationService, toView } from '../../../../../layers/core/src/admin/integrations/service.ts';
import { ProviderService } from '../../../../../layers/core/src/admin/providers/service.ts';
import { legacyConfigurations, VirtualKeyService, toView as vkView } from '../../../../../layers/core/src/admin/virtual-keys/service.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { ForbiddenError, type FieldProblem } from '../../../../../layers/core/src/http/errors.ts';
import type { Principal } from '../../../../../layers/core/src/kernel/principal.ts';
import { CipherError } from '../../../../../layers/core/src/ports/cipher.ts';
import type { ProviderDefinition } from '../../../../../layers/core/src/providers/types.ts';
import { IntegrationRepository, ProviderRepository } from '../../../../../layers/core/src/store/integrations.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { scanTable, workspaceRecord } from '../../../../support/records.ts';

const KEY = 'sk-service-0123456789abcdefghijklmnopqrstuvwxyz';
const rejection = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

function principal(org: string, workspaceId: string | null): Principal {
  return {
    kind: 'api-key',
    keyId: randomUUID(),
    organisationId: org,
    workspaceId,
    userId: null,
    email: null,
    keyType: workspaceId === null ? 'organisation-service' : 'workspace-service',
    role: workspaceId === null ? 'admin' : 'manager',
    owner: false,
    scopes: new Set(),
    defaults: null,
    limits: null,
  };
}

describe('IntegrationService', () => {
  let deps: CoreDeps;
  let service: IntegrationService;
  const org = randomUUID();
  const wsA = workspaceRecord(org, 'a');
  const wsB = workspaceRecord(org, 'b');
  const archived = workspaceRecord(org, 'old', { status: 'archived' });
  const admin = principal(org, null);

  beforeAll(async () => {
    deps = await createTestDeps();
    for (const ws of [wsA, wsB, archived]) await deps.repos.workspaces.create(ws);
    service = new IntegrationService(deps);
  });

  it('stores the key only as ciphertext bound to the integration, and shows a mask', async () => {
    const { id } = await service.create(admin, { name: 'Sealed', ai_provider_id: 'openai', key: KEY });
    const rec = await service.get(admin, id);
    expect(rec.slug).toBe('sealed');
    expect(rec.secret).toMatch(/^gl1\./);
    expect(JSON.stringify(await scanTable(deps.repos.table))).not.toContain(KEY);
    expect((await openCredentials(deps.cipher, rec.secret, integrationContext(org, id))).key).toBe(KEY);
    const view = toView(rec);
    expect(view.masked_key).toBe('sk-s****wxyz');
    expect(JSON.stringify(view)).not.toContain(KEY);

    // The same ciphertext on another record does not decrypt there.
    const { id: otherId } = await service.create(admin, { name: 'Other', ai_provider_id: 'openai', key: 'sk-other-key-1234567890' });
    const other = (await service.get(admin, otherId)) as typeof rec;
    await new IntegrationRepository(deps.repos.table).update({ ...other, secret: rec.secret });
    const moved = await rejection(openCredentials(deps.cipher, rec.secret, integrationContext(org, otherId)));
    expect(moved).toBeInstanceOf(CipherError);
  });

  it('generates distinct slugs from a reused name', async () => {
    const a = await service.create(admin, { name: 'Twin Name', ai_provider_id: 'openai' });
    const b = await service.create(admin, { name: 'Twin Name', ai_provider_id: 'openai' });
    expect(a.slug).toBe('twin-name');
    expect(b.slug).toMatch(/^twin-name-[0-9a-f]{6}$/);
  });

  it('is for organisation principals only', async () => {
    const ws = principal(org, wsA.id);
    expect(await rejection(service.create(ws, { name: 'x', ai_provider_id: 'openai' }))).toBeInstanceOf(ForbiddenError);
    expect(await rejection(service.list(ws, {}))).toBeInstanceOf(ForbiddenError);
  });

  it('creates default providers in every active workspace when all may use it', async () => {
    const { id } = await service.create(admin, { name: 'Everywhere', ai_provider_id: 'openai', create_default_provider: true });
    const providers = await new ProviderRepository(deps.repos.table).byIntegration(id);
    expect(providers.map((p) => p.workspace_id).sort()).toEqual([wsA.id, wsB.id].sort());
    expect(providers.every((p) => p.slug === 'everywhere')).toBe(true);
    expect(await new IntegrationRepository(deps.repos.table).providerCount(org, id)).toBe(2);
  });

  it('removes the key with null, and keeps it when other fields change', async () => {
    const { id } = await service.create(admin, { name: 'Removable', ai_provider_id: 'openai', key: KEY, configurations: { openai_project: 'p' } });
    await service.update(admin, id, { name: 'Renamed', configurations: { openai_project: 'q' } });
    let rec = await service.get(admin, id);
    expect([rec.name, rec.configurations, rec.masked_key]).toEqual(['Renamed', { openai_project: 'q' }, 'sk-s****wxyz']);
    expect((await openCredentials(deps.cipher, rec.secret, integrationContext(org, id))).key).toBe(KEY);
    await service.update(admin, id, { key: null });
    rec = await service.get(admin, id);
    expect([rec.secret, rec.masked_key]).toEqual([null, null]);
  });

  it('filters lists by workspace, provider, tags, status and type', async () => {
    const { id } = await service.create(admin, { name: 'Filtered', ai_provider_id: 'groq', tags: { tier: 'gold' }, workspace_ids: ['b'] });
    const slugs = async (f: Parameters<IntegrationService['list']>[1]) => (await service.list(admin, f)).map((r) => r.id);
    expect(await slugs({ tags: { tier: 'gold' } })).toEqual([id]);
    expect(await slugs({ ai_provider_id: 'groq' })).toEqual([id]);
    expect(await slugs({ workspace: 'b', tags: { tier: 'gold' } })).toEqual([id]);
    expect(await slugs({ workspace: 'a', tags: { tier: 'gold' } })).toEqual([]);
    expect(await slugs({ type: 'workspace' })).toEqual([]);
    await service.update(admin, id, { status: 'archived' });
    expect(await slugs({ status: 'active', tags: { tier: 'gold' } })).toEqual([]);
    const providers = new ProviderService(deps);
    const refused = await rejection(providers.create(admin, { name: 'p', integration_id: id, workspace_id: 'b' }));
    expect((refused as { problems: FieldProblem[] }).problems).toEqual([
      { path: 'integration_id', message: `integration ${(await service.get(admin, id)).slug} is archived` },
    ]);
  });
});

describe('VirtualKeyService', () => {
  let deps: CoreDeps;
  const org = randomUUID();
  const ws = workspaceRecord(org, 'main');
  const admin = principal(org, null);

  beforeAll(async () => {
    deps = await createTestDeps();
    await deps.repos.workspaces.create(ws);
  });

  it('stores the key encrypted, shows it masked, keeps it when other fields change', async () => {
    const service = new VirtualKeyService(deps);
    const created = await service.create(admin, {
      name: 'Team key',
      provider: 'openai',
      key: KEY,
      workspace_id: 'main',
      configurations: { openai_project: 'p' },
    });
    expect(created.slug).toBe('team-key');
    expect(JSON.stringify(await scanTable(deps.repos.table))).not.toContain(KEY);
    await service.update(admin, created.slug, 'main', { note: 'n', configurations: { openai_organization: 'o' } });
    const rec = await service.get(admin, created.id, null);
    const view = vkView(rec, Date.UTC(2026, 0, 1));
    expect(view).toMatchObject({ note: 'n', masked_key: 'sk-s****wxyz', model_config: { openai_organization: 'o' }, status: 'active' });
    expect(JSON.stringify(view)).not.toContain(KEY);
  });

  it('maps the legacy Azure fields, only for azure-openai', () => {
    const azure: ProviderDefinition = { id: 'azure-openai', name: 'Azure', baseUrl: 'https://x', auth: { kind: 'header', header: 'api-key' }, endpoints: {} };
    const problems: FieldProblem[] = [];
    expect(legacyConfigurations(azure, { resourceName: 'res', deploymentName: 'gpt4o', apiVersion: '2024-10-21' }, problems)).toEqual({
      azure_resource_name: 'res',
      azure_deployment_config: [{ azure_api_version: '2024-10-21', azure_deployment_name: 'gpt4o', azure_model_slug: 'gpt4o', is_default: true }],
    });
    expect(
      legacyConfigurations(
        azure,
        {
          deploymentConfig: [
            { apiVersion: 'v1', deploymentName: 'd1', alias: 'gpt-4o', is_default: true },
            { apiVersion: 'v1', deploymentName: 'd2' },
          ],
        },
        problems,
      ),
    ).toEqual({
      azure_deployment_config: [
        { azure_api_version: 'v1', azure_deployment_name: 'd1', azure_model_slug: 'gpt-4o', alias: 'gpt-4o', is_default: true },
        { azure_api_version: 'v1', azure_deployment_name: 'd2', azure_model_slug: 'd2' },
      ],
    });
    expect(problems).toEqual([]);
    legacyConfigurations(azure, { deploymentName: 'd' }, problems);
    legacyConfigurations({ ...azure, id: 'openai' }, { resourceName: 'r' }, problems);
    expect(problems.map((p) => p.path)).toEqual(['apiVersion', 'resourceName']);
  });
});
