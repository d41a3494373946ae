/**
 * `StoredPromptSource` on DynamoDB Local, seen from a second instance sharing the table (as Lambda
 * instances share it): a label move or a makeDefault made elsewhere is served stale for less than
 * 5 s and fresh from 5 s on, even with the default 10 s key cache; the writing instance sees it at
 * once. Reference forms: id, slug, slug@n, slug@latest, slug@label (universal, organisation and
 * workspace labels), and what `PromptVersion` carries (provider, lenient, raw).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CollectionService } from '../../../../layers/core/src/admin/collections/service.ts';
import { LabelService } from '../../../../layers/core/src/admin/labels/service.ts';
import { PromptService } from '../../../../layers/core/src/admin/prompts/service.ts';
import { ensureBootstrap } from '../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import type { Principal } from '../../../../layers/core/src/kernel/principal.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { MAX_POINTER_TTL_MS, splitRef, StoredPromptSource } from '../../../../layers/core/src/prompts/source.ts';
import { createTestDeps, createTestDepsOn } from '../../../support/deps.ts';

const KEY = 'gw_prompt-source-owner-key-0123456789abcdef';

describe('StoredPromptSource', () => {
  let writer: CoreDeps;
  let owner: Principal;
  let clock: ManualClock;
  let other: StoredPromptSource;
  let prompts: PromptService;

  beforeAll(async () => {
    writer = await createTestDeps();
    await ensureBootstrap(writer, KEY);
    owner = await writer.keyAuth.authenticateRequest(new Headers({ 'x-gw-api-key': KEY }), 'admin');
    clock = new ManualClock();
    const reader = createTestDepsOn(writer.config.tableName, {}, { clock });
    expect(reader.config.keyCacheTtlMs).toBe(10_000);
    other = reader.prompts as StoredPromptSource;
    prompts = new PromptService(writer);
    const collection = await new CollectionService(writer).create(owner, { name: 'Refs', workspace_id: 'default' });
    const base = { collection_id: collection.id, parameters: { temperature: 0 }, model: 'gpt-4o-mini' };
    await prompts.create(owner, { ...base, name: 'Fresh', string: 'v1', provider: 'openai-prod' });
    await prompts.update(owner, 'fresh', { patch: true, string: 'v2' });
    await prompts.update(owner, 'fresh', {
      patch: true,
      string: '{"messages": []}',
      is_raw_template: true,
      template_metadata: { lenient: true },
      virtual_key: 'vk-legacy',
      provider: null,
    });
  });

  it('splits a reference at its last @', () => {
    expect(splitRef('fresh')).toEqual({ name: 'fresh', suffix: undefined });
    expect(splitRef('fresh@3')).toEqual({ name: 'fresh', suffix: '3' });
    expect(splitRef('@fresh')).toEqual({ name: '@fresh', suffix: undefined });
  });

  it('resolves every reference form and maps the version', async () => {
    const read = async (ref: string) => (await other.prompt(owner, ref))?.version;
    const id = (await other.prompt(owner, 'fresh'))?.promptId ?? '';
    expect([
      await read('fresh'),
      await read(id),
      await read(`${id}@2`),
      await read('fresh@latest'),
      await read('fresh@0'),
      await read('fresh@4'),
      await read('nope'),
    ]).toEqual([1, 1, 2, 3, undefined, undefined, undefined]);
    expect(await other.prompt(owner, 'fresh@1')).toMatchObject({
      slug: 'fresh',
      template: 'v1',
      provider: '@openai-prod',
      lenient: false,
      isRawTemplate: false,
      parameters: { temperature: 0 },
      model: 'gpt-4o-mini',
      tools: null,
      functions: null,
    });
    expect(await other.prompt(owner, 'fresh@3')).toMatchObject({ provider: 'vk-legacy', lenient: true, isRawTemplate: true });
  });

  it('a label move and a makeDefault made elsewhere are served within 5 s; here at once', async () => {
    await prompts.label(owner, 'fresh', '1', 'production');
    const label = await new LabelService(writer).create(owner, { name: 'blue' });
    await prompts.label(owner, 'fresh', '2', label.id);
    clock.advance(MAX_POINTER_TTL_MS);
    expect((await other.prompt(owner, 'fresh@production'))?.version).toBe(1);
    expect((await other.prompt(owner, 'fresh@blue'))?.version).toBe(2);
    await prompts.label(owner, 'fresh', '3', 'production');
    await prompts.admin.makeDefault(owner, 'fresh', 2);
    expect((await writer.prompts?.prompt(owner, 'fresh@production'))?.version).toBe(3);
    clock.advance(MAX_POINTER_TTL_MS - 1);
    expect((await other.prompt(owner, 'fresh@production'))?.version).toBe(1);
    expect((await other.prompt(owner, 'fresh'))?.version).toBe(1);
    clock.advance(1);
    expect((await other.prompt(owner, 'fresh@production'))?.version).toBe(3);
    expect((await other.prompt(owner, 'fresh'))?.version).toBe(2);
  });

  it('invalidate() reads pointers again at once', async () => {
    await prompts.label(owner, 'fresh', '1', 'staging');
    clock.advance(MAX_POINTER_TTL_MS);
    expect((await other.prompt(owner, 'fresh@staging'))?.version).toBe(1);
    await prompts.label(owner, 'fresh', '2', 'staging');
    other.invalidate();
    expect((await other.prompt(owner, 'fresh@staging'))?.version).toBe(2);
  });
});
