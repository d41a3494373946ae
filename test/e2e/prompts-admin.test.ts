/**
 * The prompt resource over plain HTTP, against the local server and through the real Lambda
 * handlers: collections (nested), labels (universal, organisation, workspace), partials and prompts
 * with immutable versions, `patch` semantics, labels on versions, makeDefault, all-or-nothing
 * delete, validation naming every field, audit entries; and what the render side reads through
 * `deps.prompts` (id, slug, slug@n, slug@latest, slug@label).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../layers/core/src/kernel/principal.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { workspaceRecord } from '../support/records.ts';

type Json = Record<string, unknown>;
interface Problem {
  path: string;
  message: string;
}

const P = '/v1/prompts';

describe.each(['direct', 'lambda'] as const)('prompt resource admin routes (%s mode)', (mode) => {
  let gw: TestGantry;
  let wsKey: string;
  let wsPrincipal: Principal;
  let collection: string;

  const ok = async (method: string, path: string, payload?: unknown, key?: string): Promise<Json> => {
    const res = await gw.admin(method, path, payload, key);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.json)}`).toBe(200);
    return res.json;
  };
  const problems = async (method: string, path: string, payload: unknown): Promise<Problem[]> => {
    const res = await gw.admin(method, path, payload);
    expect(res.status, JSON.stringify(res.json)).toBe(400);
    expect(res.json.errorCode).toBe('AB01');
    return res.json.errors as Problem[];
  };
  const paths = async (method: string, path: string, payload: unknown) => (await problems(method, path, payload)).map((p) => p.path).sort();
  const source = () => {
    const s = gw.deps.prompts;
    if (!s) throw new Error('createDeps sets a prompt source');
    return s;
  };
  const promptBody = (patch: Json = {}): Json => ({
    name: 'Support reply',
    collection_id: collection,
    string: 'Hello {{name}}',
    parameters: { temperature: 0.2 },
    model: 'gpt-4o-mini',
    provider: 'openai-prod',
    template_metadata: { team: 'support' },
    ...patch,
  });

  beforeAll(async () => {
    gw = await startGantry(mode);
    const all = ['create', 'read', 'list', 'update', 'delete'];
    wsKey = await gw.workspaceKey(['prompts', 'prompt_partials', 'collections', 'labels'].flatMap((r) => all.map((a) => `${r}.${a}`)));
    wsPrincipal = await gw.deps.keyAuth.authenticateRequest(new Headers({ 'x-gw-api-key': wsKey }), 'admin');
    collection = (await ok('POST', '/v1/collections', { name: 'Support', workspace_id: 'default' })).id as string;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('collections: nested, listed with details, renamed, deleted only when empty', async () => {
    const parent = await ok('POST', '/v1/collections', { name: 'Sales Bots', workspace_id: 'default' });
    expect(parent).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), slug: 'sales-bots', object: 'collection' });
    const child = await ok('POST', '/v1/collections', { name: 'EU', parent_collection_id: 'sales-bots' }, wsKey);
    const detail = await ok('GET', `/v1/collections/${parent.id as string}`);
    expect(detail).toMatchObject({
      object: 'collection',
      name: 'Sales Bots',
      workspace_id: gw.boot.workspaceId,
      parent_collection_id: null,
      is_default: false,
      status: 'active',
    });
    expect(detail.child_collections).toEqual([expect.objectContaining({ id: child.id, name: 'EU' })]);
    expect(detail.collection_details).toMatchObject({ child_collections_count: 1, prompts_count: 0 });
    const listed = await ok('GET', `/v1/collections?workspace_id=default&search=sales`);
    expect(listed).toMatchObject({ object: 'list', total: 1 });
    expect((await ok('GET', '/v1/collections?page_size=1&current_page=1')).data).toHaveLength(1);
    expect(await ok('PUT', `/v1/collections/${child.id as string}`, { name: 'Europe' })).toEqual({});
    expect((await ok('GET', `/v1/collections/${child.id as string}`)).parent_collection_id).toBe(parent.id);
    const held = await gw.admin('DELETE', `/v1/collections/${parent.id as string}`);
    expect(held.status).toBe(409);
    expect(String(held.json.message)).toContain(`collection ${child.slug as string}`);
    await ok('DELETE', `/v1/collections/${child.id as string}`);
    await ok('DELETE', `/v1/collections/${parent.id as string}`);
    expect((await gw.admin('GET', `/v1/collections/${parent.id as string}`)).status).toBe(404);
  });

  it('collections: every bad field named', async () => {
    expect(await paths('POST', '/v1/collections', { workspace_id: 'default' })).toEqual(['name']);
    expect(await paths('POST', '/v1/collections', { name: 'x', workspace_id: 'default', parent: 'y' })).toEqual(['']);
    expect(await paths('POST', '/v1/collections', { name: 'x' })).toEqual(['workspace_id']);
    expect(await paths('PUT', `/v1/collections/${collection}`, {})).toEqual(['name']);
    const missing = await gw.admin('POST', '/v1/collections', { name: 'x', workspace_id: 'default', parent_collection_id: 'nope' });
    expect([missing.status, missing.json.errorCode]).toEqual([404, 'AB08']);
  });

  it('labels: universal ones from the start, organisation and workspace labels, names checked', async () => {
    const listed = await ok('GET', '/v1/labels');
    expect((listed.data as Json[]).filter((l) => l.is_universal).map((l) => l.name)).toEqual(['production', 'staging', 'development']);
    const orgLabel = await ok('POST', '/v1/labels', { name: 'canary', description: 'tried first', color_code: '#1e90ff' });
    expect(orgLabel).toEqual({ id: expect.any(String), object: 'label' });
    expect(await ok('GET', `/v1/labels/${orgLabel.id as string}`)).toMatchObject({
      name: 'canary',
      workspace_id: null,
      is_universal: false,
      color_code: '#1e90ff',
      organisation_id: gw.boot.organisationId,
    });
    const wsLabel = await ok('POST', '/v1/labels', { name: 'qa' }, wsKey);
    expect((await ok('GET', `/v1/labels/${wsLabel.id as string}`)).workspace_id).toBe(gw.boot.workspaceId);
    expect((await gw.admin('POST', '/v1/labels', { name: 'canary' })).status).toBe(409);
    expect((await gw.admin('POST', '/v1/labels', { name: 'production' })).status).toBe(409);
    for (const name of ['latest', 'default', '42', 'a@b', 'has space', '']) expect(await paths('POST', '/v1/labels', { name })).toEqual(['name']);
    expect(await paths('POST', '/v1/labels', { name: 'ok', color_code: 'blue' })).toEqual(['color_code']);
    expect(await paths('PUT', `/v1/labels/${wsLabel.id as string}`, {})).toEqual(['']);
    expect(await ok('PUT', `/v1/labels/${wsLabel.id as string}`, { name: 'qa-team', description: null })).toEqual({});
    expect((await ok('GET', `/v1/labels/${wsLabel.id as string}`)).name).toBe('qa-team');
    // The old name is free again; organisation labels are changed by organisation keys only.
    expect((await ok('POST', '/v1/labels', { name: 'qa', workspace_id: 'default' })).id).toEqual(expect.any(String));
    expect((await gw.admin('PUT', `/v1/labels/${orgLabel.id as string}`, { description: 'mine' }, wsKey)).status).toBe(403);
    const universal = (listed.data as Json[])[0] as Json;
    for (const [method, body] of [
      ['PUT', { description: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await gw.admin(method, `/v1/labels/${universal.id as string}`, body);
      expect([res.status, res.json.errorCode]).toEqual([403, 'AB03']);
    }
    expect((await ok('GET', '/v1/labels?search=qa')).total).toBe(2);
    await ok('DELETE', `/v1/labels/${wsLabel.id as string}`);
    expect((await gw.admin('GET', `/v1/labels/${wsLabel.id as string}`)).status).toBe(404);
  });

  it('partials: create, get by id or slug, a new version per string, makeDefault, delete', async () => {
    const created = await ok('POST', '/v1/prompts/partials', { name: 'Tone', string: 'Be kind.', workspace_id: 'default', version_description: 'v1' });
    expect(created).toEqual({ id: expect.any(String), slug: 'tone', version_id: expect.any(String), object: 'partial' });
    expect(await ok('GET', '/v1/prompts/partials/tone')).toEqual(await ok('GET', `/v1/prompts/partials/${created.id as string}`));
    const updated = await ok('PUT', '/v1/prompts/partials/tone', { string: 'Be very kind.', description: 'kinder' });
    expect(updated.prompt_partial_version_id).not.toBe(created.version_id);
    // A new version is a draft until published.
    expect(await ok('GET', '/v1/prompts/partials/tone')).toMatchObject({
      string: 'Be kind.',
      version: 1,
      latest_version: 2,
      prompt_partial_version_status: 'published',
    });
    expect((await source().partial(wsPrincipal, 'tone@latest'))?.content).toBe('Be very kind.');
    const versions = await ok('GET', '/v1/prompts/partials/tone/versions');
    expect((versions.data as Json[]).map((v) => [v.version, v.description, v.prompt_version_status])).toEqual([
      [1, 'v1', 'published'],
      [2, 'kinder', 'draft'],
    ]);
    await ok('PUT', '/v1/prompts/partials/tone/makeDefault', { version: 2 });
    expect(await source().partial(wsPrincipal, 'tone')).toMatchObject({ slug: 'tone', version: 2, content: 'Be very kind.' });
    expect(await source().partial(wsPrincipal, 'tone@1')).toMatchObject({ version: 1, content: 'Be kind.' });
    expect((await ok('GET', '/v1/prompts/partials?search=ton')).total).toBe(1);
    const noVersion = await gw.admin('PUT', '/v1/prompts/partials/tone/makeDefault', { version: 9 });
    expect([noVersion.status, noVersion.json.errorCode, noVersion.json.message]).toEqual([
      404,
      'AB08',
      'version: Prompt partial tone has no version 9 (latest: 2)',
    ]);
    expect(await paths('PUT', '/v1/prompts/partials/tone/makeDefault', { version: 'two' })).toEqual(['version']);
    expect(await paths('PUT', '/v1/prompts/partials/tone', { description: 'only' })).toEqual(['description']);
    expect(await paths('POST', '/v1/prompts/partials', { name: 'x', workspace_id: 'default', strng: 'typo' })).toEqual(['']);
    expect(await paths('POST', '/v1/prompts/partials', { name: 'x', workspace_id: 'default' })).toEqual(['string']);
    await ok('DELETE', '/v1/prompts/partials/tone');
    expect((await gw.admin('GET', '/v1/prompts/partials/tone')).status).toBe(404);
    expect(await source().partial(wsPrincipal, 'tone@1')).toBeUndefined();
  });

  it('prompts: create answers id, slug, version_id; get by id or slug; every bad field named', async () => {
    const created = await ok('POST', P, promptBody({ name: 'Greeting' }));
    expect(created).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), slug: 'greeting', version_id: expect.any(String), object: 'prompt' });
    const byId = await ok('GET', `${P}/${created.id as string}`);
    expect(await ok('GET', `${P}/greeting`)).toEqual(byId);
    expect(byId).toMatchObject({
      object: 'prompt',
      name: 'Greeting',
      collection_id: collection,
      workspace_id: gw.boot.workspaceId,
      string: 'Hello {{name}}',
      parameters: { temperature: 0.2 },
      model: 'gpt-4o-mini',
      provider: '@openai-prod',
      virtual_key: null,
      template_metadata: { team: 'support' },
      is_raw_template: false,
      prompt_version: 1,
      prompt_version_id: created.version_id,
      prompt_version_status: 'published',
      default_version: 1,
      latest_version: 1,
    });
    const listed = await ok('GET', `${P}?collection_id=${collection}&search=greet`);
    expect(listed).toMatchObject({ object: 'list', total: 1 });
    expect((listed.data as Json[])[0]).toMatchObject({ object: 'prompt', slug: 'greeting', model: 'gpt-4o-mini' });
    expect((listed.data as Json[])[0]).not.toHaveProperty('string');
    expect(await paths('POST', P, { collection_id: collection })).toEqual(['name', 'parameters', 'string']);
    expect(await paths('POST', P, promptBody({ parameters: [], tools: 'x', tool_choice: 7 }))).toEqual(['parameters', 'tool_choice', 'tools']);
    expect(await paths('POST', P, promptBody({ virtual_key: 'vk-main' }))).toEqual(['virtual_key']);
    expect(await paths('POST', P, promptBody({ templat_metadata: {} }))).toEqual(['']);
    expect(await paths('POST', P, promptBody({ string: '' }))).toEqual(['string']);
    // Deeper than DynamoDB stores: named, never a 500.
    let deep: Json = { x: 1 };
    for (let i = 0; i < 40; i++) deep = { a: deep };
    const tooDeep = await problems('POST', P, promptBody({ parameters: deep, tools: [deep], template_metadata: deep }));
    expect(tooDeep.map((p) => p.path).sort()).toEqual(['parameters', 'template_metadata', 'tools[0]']);
    expect(tooDeep[0]?.message).toBe('must nest at most 24 levels');
    const noCollection = await gw.admin('POST', P, promptBody({ collection_id: 'nope' }));
    expect([noCollection.status, noCollection.json.message]).toEqual([404, 'collection_id: Collection nope not found']);
  });

  it('updates: without patch every missing version field is named; with patch they come from the latest version', async () => {
    const { id } = await ok(
      'POST',
      P,
      promptBody({ name: 'Patchable', virtual_key: 'vk-legacy', provider: undefined, tools: [{ type: 'function', function: { name: 'f' } }] }),
    );
    const strict = await problems('PUT', `${P}/${id as string}`, { string: 'New {{name}}' });
    expect(strict.map((p) => p.path).sort()).toEqual(['model', 'parameters', 'template_metadata']);
    expect(strict[0]?.message).toContain('patch');
    const patched = await ok('PUT', `${P}/${id as string}`, { patch: true, string: 'Hi {{name}}', version_description: 'friendlier' });
    expect(patched).toEqual({ id, slug: 'patchable', prompt_version_id: expect.any(String), prompt_version: 2, object: 'prompt' });
    const v2 = await ok('GET', `${P}/${id as string}/versions/2`);
    expect(v2).toMatchObject({
      string: 'Hi {{name}}',
      parameters: { temperature: 0.2 },
      model: 'gpt-4o-mini',
      template_metadata: { team: 'support' },
      virtual_key: 'vk-legacy',
      tools: [{ type: 'function', function: { name: 'f' } }],
      prompt_version_description: 'friendlier',
      prompt_version_status: 'draft',
    });
    expect(await ok('GET', `${P}/${id as string}/versions/${patched.prompt_version_id as string}`)).toEqual(v2);
    // Without patch, a full version: fields not sent are not inherited.
    await ok('PUT', `${P}/${id as string}`, { string: 'Full', parameters: {}, model: 'gpt-4o', prompt_metadata: { lenient: true } });
    expect(await ok('GET', `${P}/${id as string}/versions/latest`)).toMatchObject({
      prompt_version: 3,
      string: 'Full',
      virtual_key: null,
      tools: null,
      template_metadata: { lenient: true },
    });
    // The published version did not move; versions are listed oldest first.
    expect((await ok('GET', `${P}/${id as string}`)).prompt_version).toBe(1);
    const versions = await ok('GET', `${P}/${id as string}/versions`);
    expect((versions.data as Json[]).map((v) => [v.prompt_version, v.status])).toEqual([
      [1, 'published'],
      [2, 'draft'],
      [3, 'draft'],
    ]);
    // Name only: no new version.
    expect((await ok('PUT', `${P}/${id as string}`, { name: 'Renamed' })).prompt_version).toBe(1);
    expect((await ok('GET', `${P}/${id as string}`)).latest_version).toBe(3);
    expect(await paths('PUT', `${P}/${id as string}`, { patch: true })).toEqual(['']);
    expect(await paths('PUT', `${P}/${id as string}`, { patch: true, template_metadata: {}, prompt_metadata: {} })).toEqual(['prompt_metadata']);
    expect((await gw.admin('GET', `${P}/${id as string}/versions/9`)).status).toBe(404);
  });

  it('labels on versions and makeDefault reach every reference form through deps.prompts', async () => {
    const { id } = await ok('POST', P, promptBody({ name: 'Refs', string: 'one' }));
    await ok('PUT', `${P}/refs`, { patch: true, string: 'two' });
    await ok('PUT', `${P}/refs`, { patch: true, string: 'three', template_metadata: { lenient: true } });
    const read = async (ref: string) => (await source().prompt(wsPrincipal, ref))?.template;
    expect([await read('refs'), await read(id as string), await read('refs@2'), await read('refs@latest'), await read('refs@production')]).toEqual([
      'one',
      'one',
      'two',
      'three',
      undefined,
    ]);
    await ok('PUT', `${P}/refs/versions/2`, { label_id: 'production' });
    expect(await read('refs@production')).toBe('two');
    const labelled = await ok('GET', `${P}/refs/versions/2`);
    expect(labelled.prompt_version_label_id).toBe('00000000-0000-4000-8000-000000000001');
    // A label is on one version of a prompt: it moves.
    await ok('PUT', `${P}/refs/versions/3`, { label_id: '00000000-0000-4000-8000-000000000001' });
    expect(await read('refs@production')).toBe('three');
    expect((await ok('GET', `${P}/refs/versions/2`)).prompt_version_label_id).toBeNull();
    await ok('PUT', `${P}/refs/makeDefault`, { version: 2 });
    expect(await source().prompt(wsPrincipal, 'refs')).toMatchObject({
      promptId: id,
      slug: 'refs',
      version: 2,
      template: 'two',
      lenient: false,
      provider: '@openai-prod',
      model: 'gpt-4o-mini',
      parameters: { temperature: 0.2 },
      isRawTemplate: false,
    });
    expect((await source().prompt(wsPrincipal, 'refs@3'))?.lenient).toBe(true);
    expect(await source().prompt(wsPrincipal, 'refs@4')).toBeUndefined();
    expect(await source().prompt(wsPrincipal, 'refs@nolabel')).toBeUndefined();
    // A label of the organisation, in use: not deleted until moved off.
    const label = await ok('POST', '/v1/labels', { name: 'beta' });
    await ok('PUT', `${P}/refs/versions/1`, { label_id: label.id });
    expect(await read('refs@beta')).toBe('one');
    const inUse = await gw.admin('DELETE', `/v1/labels/${label.id as string}`);
    expect(inUse.status).toBe(409);
    expect(String(inUse.json.message)).toContain('refs@1');
    expect(await paths('PUT', `${P}/refs/versions/1`, {})).toEqual(['label_id']);
    const noLabel = await gw.admin('PUT', `${P}/refs/versions/1`, { label_id: 'missing' });
    expect([noLabel.status, noLabel.json.errorCode, noLabel.json.message]).toEqual([404, 'AB08', 'label_id: Label missing not found']);
    // Delete takes versions and label pointers with the prompt, at once.
    await ok('DELETE', `${P}/refs`);
    expect((await gw.admin('GET', `${P}/refs`)).status).toBe(404);
    expect(await read('refs@2')).toBeUndefined();
    await ok('DELETE', `/v1/labels/${label.id as string}`);
  });

  it('a prompt in a collection keeps the collection; workspace keys see their own workspace only', async () => {
    await ok('POST', P, promptBody({ name: 'Pinned' }));
    const held = await gw.admin('DELETE', `/v1/collections/${collection}`);
    expect(held.status).toBe(409);
    expect(String(held.json.message)).toContain('prompt pinned');
    await gw.deps.repos.workspaces.create(workspaceRecord(gw.boot.organisationId, 'other-ws'));
    const other = await ok('POST', '/v1/collections', { name: 'Elsewhere', workspace_id: 'other-ws' });
    const there = await ok('POST', P, promptBody({ name: 'Elsewhere prompt', collection_id: other.id }));
    expect((await gw.admin('GET', `${P}/${there.id as string}`, undefined, wsKey)).status).toBe(404);
    expect(await source().prompt(wsPrincipal, there.slug as string)).toBeUndefined();
    expect(((await ok('GET', P, undefined, wsKey)).data as Json[]).map((p) => p.slug)).not.toContain(there.slug);
    expect((await gw.admin('POST', '/v1/collections', { name: 'x', workspace_id: 'other-ws' }, wsKey)).status).toBe(404);
    const moved = await gw.admin('PUT', `${P}/pinned`, { collection_id: other.id });
    expect([moved.status, (moved.json.errors as Problem[])[0]?.path]).toEqual([400, 'collection_id']);
  });

  it('writes one audit entry per change, naming the prompt', async () => {
    const created = await ok('POST', P, promptBody({ name: 'Audited' }));
    await ok('PUT', `${P}/audited/makeDefault`, { version: 1 });
    const start = new Date(Date.now() - 3_600_000).toISOString();
    const end = new Date(Date.now() + 60_000).toISOString();
    const logs = await ok('GET', `/v1/audit-logs?start_time=${start}&end_time=${end}&page_size=100`);
    const entries = (logs.data as Json[]).filter((e) => e.resource_type === 'prompts' && e.resource_id === created.id);
    expect(entries.map((e) => [e.action, e.outcome]).sort()).toEqual([
      ['create', 'success'],
      ['update', 'success'],
    ]);
  });
});
