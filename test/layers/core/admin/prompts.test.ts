/**
 * Prompt deletes are all-or-nothing on DynamoDB Local: a delete that raced a new version, or a
 * prompt with more versions than one transaction holds, is refused with a 409 and leaves the
 * prompt, its versions and its label pointers as they were.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CollectionService } from '../../../../layers/core/src/admin/collections/service.ts';
import { PromptService } from '../../../../layers/core/src/admin/prompts/service.ts';
import { ensureBootstrap } from '../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ConflictError, ValidationError } from '../../../../layers/core/src/http/errors.ts';
import type { Principal } from '../../../../layers/core/src/kernel/principal.ts';
import { MAX_VERSIONS_DELETED_AT_ONCE } from '../../../../layers/core/src/store/versioned.ts';
import { createTestDeps } from '../../../support/deps.ts';

const KEY = 'gw_prompt-delete-owner-key-0123456789abcdef';

describe('prompt delete', () => {
  let deps: CoreDeps;
  let owner: Principal;
  let prompts: PromptService;
  let collection: string;

  beforeAll(async () => {
    deps = await createTestDeps();
    await ensureBootstrap(deps, KEY);
    owner = await deps.keyAuth.authenticateRequest(new Headers({ 'x-gw-api-key': KEY }), 'admin');
    prompts = new PromptService(deps);
    collection = (await new CollectionService(deps).create(owner, { name: 'Deletes', workspace_id: 'default' })).id;
  });

  const make = (name: string) => prompts.create(owner, { name, collection_id: collection, string: 'x', parameters: {} });

  it('refuses a delete that raced a change, leaving everything in place', async () => {
    await make('Raced');
    await prompts.label(owner, 'raced', '1', 'production');
    const stale = await prompts.admin.get(owner, 'raced');
    await prompts.update(owner, 'raced', { patch: true, string: 'y' });
    await expect(prompts.admin.repo.delete(stale)).rejects.toBeInstanceOf(ConflictError);
    expect(await prompts.admin.repo.versions(stale.id)).toHaveLength(2);
    expect((await deps.prompts?.prompt(owner, 'raced@production'))?.template).toBe('x');
    await prompts.admin.delete(owner, 'raced');
    expect(await prompts.admin.repo.versions(stale.id)).toHaveLength(0);
    expect(await prompts.admin.repo.resolve(owner.organisationId, 'raced')).toBeUndefined();
  });

  it('refuses to delete more versions than one transaction holds, with a 409 saying so', async () => {
    const { id } = await make('Long history');
    for (let i = 0; i < MAX_VERSIONS_DELETED_AT_ONCE; i++) await prompts.update(owner, id, { patch: true, string: `v${i + 2}` });
    const err = await prompts.admin.delete(owner, id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).message).toContain(`has ${MAX_VERSIONS_DELETED_AT_ONCE + 1} versions`);
    expect(await prompts.admin.repo.versions(id)).toHaveLength(MAX_VERSIONS_DELETED_AT_ONCE + 1);
    expect((await prompts.admin.get(owner, id)).latest_version).toBe(MAX_VERSIONS_DELETED_AT_ONCE + 1);
  });

  it('refuses a version too large for one item, naming the limit', async () => {
    const err = await prompts.update(owner, 'long-history', { patch: true, parameters: { big: 'x'.repeat(310_000) } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toContain('300000');
  });
});
