/**
 * Managed providers end to end, through the local server directly and through the real Lambda
 * handlers: an administrator stores a credential once in an integration, a workspace gets a
 * provider on it, and clients call `@slug` (header, model prefix, config target) or a legacy
 * virtual key without ever holding the key. The key reaches the mock provider, never the table in
 * plaintext, never an admin answer; allowed models, allowed workspaces and expiry hold; every
 * refusal has its status, code and field.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { scanTable, workspaceRecord } from '../support/records.ts';

type Json = Record<string, unknown>;
const MSG = [{ role: 'user', content: 'Hi' }];
const KEY = 'sk-managed-0123456789abcdefghijklmnopqrstuvwxyz';
const VK_KEY = 'sk-virtual-9876543210zyxwvutsrqponmlkjihgfedcba';
const ROTATED = 'sk-rotated-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';

interface Problem {
  path: string;
  message: string;
}

describe.each(['direct', 'lambda'] as const)('managed providers (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let wsKey: string;
  let otherWs: string;
  const clock = new ManualClock(Date.UTC(2026, 2, 1));

  const admin = async (method: string, path: string, body?: unknown, key?: string) => gw.admin(method, path, body, key);

  async function ok(method: string, path: string, body?: unknown): Promise<Json> {
    const r = await admin(method, path, body);
    expect(r.status, `${method} ${path}: ${JSON.stringify(r.json)}`).toBe(200);
    return r.json;
  }

  function expectProblem(r: { status: number; json: Json }, status: number, code: string, path?: string): void {
    expect(r.status, JSON.stringify(r.json)).toBe(status);
    expect(r.json.errorCode).toBe(code);
    if (path !== undefined) expect((r.json.errors as Problem[]).map((p) => p.path)).toContain(path);
  }

  async function chat(headers: Record<string, string>, body: Json = {}) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': wsKey, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: MSG, ...body }),
    });
    const text = await res.text();
    return { status: res.status, json: JSON.parse(text) as Json, headers: res.headers };
  }

  const errorOf = (r: { json: Json }) => r.json.error as { message: string; param: string | null; type: string };
  const lastReceived = () => {
    const r = mock.received.at(-1);
    if (!r) throw new Error('the mock received nothing');
    return { authorization: r.headers.authorization, body: JSON.parse(r.body) as Json, path: r.path };
  };

  async function integration(slug: string, extra: Json = {}): Promise<Json> {
    return ok('POST', '/v1/integrations', {
      name: `Integration ${slug}`,
      slug,
      ai_provider_id: 'openai',
      key: KEY,
      configurations: { custom_host: `${mock.url}/v1` },
      ...extra,
    });
  }

  async function provider(slug: string, integrationSlug: string, extra: Json = {}): Promise<Json> {
    return ok('POST', '/v1/providers', { name: `Provider ${slug}`, slug, integration_id: integrationSlug, workspace_id: 'default', ...extra });
  }

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, {}, { clock }), startMockOpenAI()]);
    wsKey = await gw.workspaceKey(['completions.write']);
    const other = workspaceRecord(gw.boot.organisationId, 'other');
    await gw.deps.repos.workspaces.create(other);
    otherWs = other.id;
    await integration('main', { tags: { env: 'prod', team: 'ml' }, description: 'the main one' });
    await provider('main', 'main');
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  describe('the stored key reaches the provider; the client sends none', () => {
    it('with x-gw-provider: @slug', async () => {
      const r = await chat({ 'x-gw-provider': '@main' });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json.object).toBe('chat.completion');
      const got = lastReceived();
      expect(got.authorization).toBe(`Bearer ${KEY}`);
      expect(got.path).toBe('/v1/chat/completions');
      expect(got.body.model).toBe('gpt-4o-mini');
    });

    it('reports the real provider, not the slug, and prices the answer', async () => {
      const completed: Array<{ provider?: string; costMicros?: number }> = [];
      const hook = {
        name: 'probe',
        complete: (r: { provider?: string; costMicros?: number }) => void completed.push({ provider: r.provider, costMicros: r.costMicros }),
      };
      gw.deps.gatewayHooks.push(hook);
      try {
        const r = await chat({ 'x-gw-provider': '@main' });
        expect(r.headers.get('x-gw-provider')).toBe('openai');
        for (let i = 0; i < 50 && completed.length === 0; i++) await new Promise((res) => setTimeout(res, 10));
        expect(completed[0]?.provider).toBe('openai');
        expect(completed[0]?.costMicros).toBeGreaterThan(0);
      } finally {
        gw.deps.gatewayHooks.splice(gw.deps.gatewayHooks.indexOf(hook), 1);
      }
    });

    it('ignores cloud option headers for a managed provider', async () => {
      // An administrator-configured provider: a request may not repoint its stored key.
      const r = await chat({ 'x-gw-provider': '@main', 'x-gw-azure-resource-name': 'attacker', 'x-gw-openai-project': 'proj-x' });
      expect(r.status).toBe(200);
      expect(mock.received.at(-1)?.headers['openai-project']).toBeUndefined();
    });

    it('with the model "@slug/model", which reaches the provider without its prefix', async () => {
      const r = await chat({}, { model: '@main/gpt-4o' });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(lastReceived()).toMatchObject({ authorization: `Bearer ${KEY}`, body: { model: 'gpt-4o', messages: MSG } });
    });

    it('with a config target provider "@slug", inside a fallback', async () => {
      mock.queue.push({ kind: 'error', status: 503, body: '{"error":{"message":"down"}}' });
      const config = { strategy: { mode: 'fallback' }, targets: [{ provider: '@main' }, { provider: '@main', override_params: { model: 'gpt-4o' } }] };
      const r = await chat({ 'x-gw-config': JSON.stringify(config) });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
      expect(mock.received.map((m) => m.headers.authorization)).toEqual([`Bearer ${KEY}`, `Bearer ${KEY}`]);
      expect(lastReceived().body.model).toBe('gpt-4o');
    });

    it('replaces a key the client sends with the stored one', async () => {
      const r = await chat({ 'x-gw-provider': '@main', authorization: 'Bearer sk-client-own' });
      expect(r.status).toBe(200);
      expect(lastReceived().authorization).toBe(`Bearer ${KEY}`);
    });

    it('streams through a managed provider', async () => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-gw-api-key': wsKey, 'content-type': 'application/json', 'x-gw-provider': '@main' },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: MSG, stream: true }),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('data: [DONE]');
      expect(lastReceived().authorization).toBe(`Bearer ${KEY}`);
    });
  });

  describe('credentials are never stored in plaintext nor shown', () => {
    it('keeps only ciphertext in the table', async () => {
      await ok('POST', '/v1/virtual-keys', {
        name: 'legacy',
        slug: 'vk-scan',
        workspace_id: 'default',
        provider: 'openai',
        key: VK_KEY,
        configurations: { custom_host: `${mock.url}/v1` },
      });
      const items = await scanTable(gw.deps.repos.table);
      const text = JSON.stringify(items);
      expect(text).not.toContain(KEY);
      expect(text).not.toContain(VK_KEY);
      const stored = items.find((i) => i._type === 'Integration' && i.slug === 'main');
      expect(String(stored?.secret)).toMatch(/^gl1\./);
      expect(stored?.masked_key).toBe('sk-m****wxyz');
    });

    it('answers masked keys only, in get and list, for integrations and virtual keys', async () => {
      const got = await ok('GET', '/v1/integrations/main');
      expect(got).toMatchObject({
        object: 'integration',
        slug: 'main',
        ai_provider_id: 'openai',
        masked_key: 'sk-m****wxyz',
        configurations: { custom_host: `${mock.url}/v1` },
        tags: { env: 'prod', team: 'ml' },
        workspace_ids: null,
        allowed_models: [],
        description: 'the main one',
      });
      const list = await ok('GET', '/v1/integrations');
      const vk = await ok('GET', '/v1/virtual-keys/vk-scan?workspace_id=default');
      expect(vk).toMatchObject({ object: 'virtual-key', slug: 'vk-scan', provider: 'openai', masked_key: 'sk-v****dcba', status: 'active' });
      const vkList = await ok('GET', '/v1/virtual-keys');
      for (const body of [got, list, vk, vkList]) {
        expect(JSON.stringify(body)).not.toContain(KEY);
        expect(JSON.stringify(body)).not.toContain(VK_KEY);
      }
      expect(Object.keys(got)).not.toContain('key');
    });

    it('shows providers without any credential', async () => {
      const p = await ok('GET', '/v1/providers/main?workspace_id=default');
      expect(p).toMatchObject({
        object: 'provider',
        slug: 'main',
        integration_slug: 'main',
        ai_provider_id: 'openai',
        workspace_id: gw.boot.workspaceId,
        status: 'active',
      });
      const list = await ok('GET', '/v1/providers?workspace_id=default');
      expect((list.data as Json[]).map((x) => x.slug)).toContain('main');
      expect(JSON.stringify([p, list])).not.toContain(KEY);
    });
  });

  describe('virtual keys (legacy)', () => {
    it('works as x-gw-virtual-key and as virtual_key in a config', async () => {
      await ok('POST', '/v1/virtual-keys', {
        name: 'legacy',
        slug: 'vk-1',
        workspace_id: 'default',
        provider: 'openai',
        key: VK_KEY,
        configurations: { custom_host: `${mock.url}/v1` },
      });
      const byHeader = await chat({ 'x-gw-virtual-key': 'vk-1' });
      expect(byHeader.status, JSON.stringify(byHeader.json)).toBe(200);
      expect(lastReceived().authorization).toBe(`Bearer ${VK_KEY}`);
      const byConfig = await chat({ 'x-gw-config': JSON.stringify({ virtual_key: 'vk-1', override_params: { model: 'gpt-4o' } }) });
      expect(byConfig.status, JSON.stringify(byConfig.json)).toBe(200);
      expect(lastReceived()).toMatchObject({ authorization: `Bearer ${VK_KEY}`, body: { model: 'gpt-4o' } });
      const headerUnderConfig = await chat({ 'x-gw-virtual-key': 'vk-1', 'x-gw-config': JSON.stringify({ retry: { attempts: 1 } }) });
      expect(headerUnderConfig.status, JSON.stringify(headerUnderConfig.json)).toBe(200);
      expect(lastReceived().authorization).toBe(`Bearer ${VK_KEY}`);
    });

    it('x-gw-virtual-key also names a provider slug, its managed equivalent', async () => {
      const r = await chat({ 'x-gw-virtual-key': 'main' });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(lastReceived().authorization).toBe(`Bearer ${KEY}`);
    });
  });

  describe('refusals', () => {
    it('answers 400 naming the header, the model or the config path for an unknown slug', async () => {
      const header = await chat({ 'x-gw-provider': '@nope' });
      expect(header.status).toBe(400);
      expect(errorOf(header).param).toBe('x-gw-provider');
      expect(errorOf(header).message).toContain('@nope');
      const model = await chat({}, { model: '@nope/gpt-4o' });
      expect([model.status, errorOf(model).param]).toEqual([400, 'model']);
      const config = await chat({ 'x-gw-config': JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@main' }, { provider: '@nope' }] }) });
      mock.queue.length = 0;
      expect(config.status).toBe(200);
      const bad = await chat({ 'x-gw-config': JSON.stringify({ strategy: { mode: 'single' }, targets: [{ provider: '@nope' }] }) });
      expect([bad.status, errorOf(bad).param]).toEqual([400, 'config.targets[0].provider']);
      const vk = await chat({ 'x-gw-virtual-key': 'nope' });
      expect([vk.status, errorOf(vk).param]).toEqual([400, 'x-gw-virtual-key']);
      expect(mock.received).toHaveLength(1);
    });

    it('does not let a request point a managed key at another host', async () => {
      const r = await chat({ 'x-gw-provider': '@main', 'x-gw-custom-host': 'https://collector.example.com/v1' });
      expect([r.status, errorOf(r).param]).toEqual([400, 'x-gw-custom-host']);
      expect(mock.received).toHaveLength(0);
    });

    it('enforces the integration’s allowed models', async () => {
      await integration('narrow', { allowed_models: ['gpt-4o-mini'] });
      await provider('narrow', 'narrow');
      expect((await chat({ 'x-gw-provider': '@narrow' })).status).toBe(200);
      const refused = await chat({ 'x-gw-provider': '@narrow' }, { model: 'gpt-4o' });
      expect(refused.status).toBe(403);
      expect(errorOf(refused).message).toContain('"gpt-4o"');
      expect(errorOf(refused).param).toBe('model');
      const prefixed = await chat({}, { model: '@narrow/o3' });
      expect([prefixed.status, errorOf(prefixed).message.includes('"o3"')]).toEqual([403, true]);
      expect(mock.received).toHaveLength(1);
    });

    it('enforces the workspaces an integration allows', async () => {
      await integration('elsewhere', { workspace_ids: ['other'] });
      const refused = await admin('POST', '/v1/providers', { name: 'p', slug: 'elsewhere', integration_id: 'elsewhere', workspace_id: 'default' });
      expectProblem(refused, 403, 'AB03');
      await ok('POST', '/v1/providers', { name: 'p', slug: 'elsewhere', integration_id: 'elsewhere', workspace_id: 'other' });
      // A provider of another workspace is unknown here.
      const unknown = await chat({ 'x-gw-provider': '@elsewhere' });
      expect([unknown.status, errorOf(unknown).param]).toEqual([400, 'x-gw-provider']);

      // Withdrawing a workspace stops its providers at once.
      await integration('withdrawn');
      await provider('withdrawn', 'withdrawn');
      expect((await chat({ 'x-gw-provider': '@withdrawn' })).status).toBe(200);
      await ok('PUT', '/v1/integrations/withdrawn', { workspace_ids: [otherWs] });
      const stopped = await chat({ 'x-gw-provider': '@withdrawn' });
      expect(stopped.status).toBe(403);
      expect(errorOf(stopped).message).toContain('no longer available');
    });

    it('refuses an expired provider with 403 saying so', async () => {
      const expires = new Date(clock.now() + 3_600_000).toISOString();
      await provider('brief', 'main', { expires_at: expires });
      expect((await chat({ 'x-gw-provider': '@brief' })).status).toBe(200);
      clock.advance(3_600_000);
      const r = await chat({ 'x-gw-provider': '@brief' });
      expect(r.status).toBe(403);
      expect(errorOf(r).message).toContain('expired');
      expect((await ok('GET', '/v1/providers/brief?workspace_id=default')).status).toBe('expired');
    });

    it('refuses to delete an integration in use (AB07), and deletes it once unused', async () => {
      await integration('doomed');
      await provider('doomed', 'doomed');
      const refused = await admin('DELETE', '/v1/integrations/doomed');
      expectProblem(refused, 409, 'AB07');
      expect(String(refused.json.message)).toContain('@doomed');
      expect(await ok('DELETE', '/v1/providers/doomed?workspace_id=default')).toEqual({});
      expect(await ok('DELETE', '/v1/integrations/doomed')).toEqual({});
      expectProblem(await admin('GET', '/v1/integrations/doomed'), 404, 'AB08');
      const gone = await chat({ 'x-gw-provider': '@doomed' });
      expect(gone.status).toBe(400);
    });
  });

  describe('changes apply at once', () => {
    it('uses a rotated key on the next request', async () => {
      await integration('rotating');
      await provider('rotating', 'rotating');
      await chat({ 'x-gw-provider': '@rotating' });
      expect(lastReceived().authorization).toBe(`Bearer ${KEY}`);
      await ok('PUT', '/v1/integrations/rotating', { key: ROTATED });
      await chat({ 'x-gw-provider': '@rotating' });
      expect(lastReceived().authorization).toBe(`Bearer ${ROTATED}`);
      expect((await ok('GET', '/v1/integrations/rotating')).masked_key).toBe('sk-r****aaaa');
      expect(JSON.stringify(await scanTable(gw.deps.repos.table))).not.toContain(ROTATED);
    });
  });

  describe('admin API', () => {
    it('lists integrations filtered by tags, provider and workspace, paged', async () => {
      const byTag = await ok('GET', '/v1/integrations?tags=env=prod');
      expect((byTag.data as Json[]).map((i) => i.slug)).toEqual(['main']);
      const both = await ok('GET', '/v1/integrations?tags=env=prod,team=ml');
      expect(both.total).toBe(1);
      const none = await ok('GET', '/v1/integrations?tags=env=dev');
      expect(none).toEqual({ object: 'list', total: 0, data: [] });
      const forOther = await ok('GET', '/v1/integrations?workspace_id=other');
      expect((forOther.data as Json[]).map((i) => i.slug)).toContain('elsewhere');
      const forDefault = await ok('GET', '/v1/integrations?workspace_id=default');
      expect((forDefault.data as Json[]).map((i) => i.slug)).not.toContain('elsewhere');
      const paged = await ok('GET', '/v1/integrations?page_size=1&current_page=1');
      expect((paged.data as Json[]).length).toBe(1);
      expectProblem(await admin('GET', '/v1/integrations?tags=broken'), 400, 'AB01', 'tags');
    });

    it('creates default providers in the allowed workspaces', async () => {
      const created = await ok('POST', '/v1/integrations', {
        name: 'Shared',
        ai_provider_id: 'openai',
        key: KEY,
        configurations: { custom_host: `${mock.url}/v1` },
        workspace_ids: ['default', 'other'],
        create_default_provider: true,
        default_provider_slug: 'shared-default',
      });
      expect(Object.keys(created).sort()).toEqual(['id', 'object', 'slug']);
      expect(created.slug).toBe('shared');
      const inOther = await ok('GET', '/v1/providers/shared-default?workspace_id=other');
      expect(inOther.integration_id).toBe(created.id);
      expect((await chat({ 'x-gw-provider': '@shared-default' })).status).toBe(200);
    });

    it('updates providers and answers id and slug', async () => {
      await provider('renamed', 'main');
      const r = await ok('PUT', '/v1/providers/renamed?workspace_id=default', { name: 'New name', note: 'hello' });
      expect(r).toMatchObject({ slug: 'renamed', object: 'provider' });
      expect(await ok('GET', '/v1/providers/renamed?workspace_id=default')).toMatchObject({ name: 'New name', note: 'hello' });
    });

    it('keeps integrations organisation-level: a workspace key cannot hold their scopes', async () => {
      const r = await admin('POST', '/v1/api-keys/workspace/service', { name: 'k', workspace_id: 'default', scopes: ['integrations.read'] });
      expectProblem(r, 400, 'AB01', 'scopes[0]');
    });

    it('lets a workspace key manage its own providers only', async () => {
      const manager = await gw.workspaceKey(['providers.create', 'providers.read', 'providers.list']);
      const created = await admin('POST', '/v1/providers', { name: 'mine', integration_id: 'main' }, manager);
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      expect(created.json.slug).toBe('mine');
      const listed = await admin('GET', '/v1/providers', undefined, manager);
      expect((listed.json.data as Json[]).every((p) => p.workspace_id === gw.boot.workspaceId)).toBe(true);
      expectProblem(await admin('GET', '/v1/providers?workspace_id=other', undefined, manager), 403, 'AB03');
      expectProblem(await admin('GET', '/v1/providers/elsewhere', undefined, manager), 404, 'AB08');
    });

    it('names the field of every bad input (AB01)', async () => {
      const cases: Array<[string, string, unknown, string]> = [
        ['POST', '/v1/integrations', { ai_provider_id: 'openai' }, 'name'],
        ['POST', '/v1/integrations', { name: 'x' }, 'ai_provider_id'],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'no-such-provider' }, 'ai_provider_id'],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'openai', slug: 'has space' }, 'slug'],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'openai', key: '' }, 'key'],
        [
          'POST',
          '/v1/integrations',
          { name: 'x', ai_provider_id: 'openai', configurations: { azure_resource_name: 'r' } },
          'configurations.azure_resource_name',
        ],
        [
          'POST',
          '/v1/integrations',
          { name: 'x', ai_provider_id: 'openai', configurations: { custom_host: 'http://10.1.2.3/v1' } },
          'configurations.custom_host',
        ],
        [
          'POST',
          '/v1/integrations',
          { name: 'x', ai_provider_id: 'openai', configurations: { custom_host: 'http://169.254.169.254/' } },
          'configurations.custom_host',
        ],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'openai', configurations: { openai_project: 7 } }, 'configurations.openai_project'],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'ollama' }, 'configurations.custom_host'],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'openai', tags: { 'bad key!': 'v' } }, 'tags["bad key!"]'],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'openai', workspace_ids: ['nowhere'] }, 'workspace_ids[0]'],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'openai', allowed_models: [''] }, 'allowed_models[0]'],
        [
          'POST',
          '/v1/integrations',
          { name: 'x', ai_provider_id: 'openai', create_default_provider: false, default_provider_slug: 'd' },
          'default_provider_slug',
        ],
        ['POST', '/v1/integrations', { name: 'x', ai_provider_id: 'openai', surprise: 1 }, ''],
        ['PUT', '/v1/integrations/main', {}, ''],
        ['PUT', '/v1/integrations/main', { configurations: { bogus: 1 } }, 'configurations.bogus'],
        ['PUT', '/v1/integrations/main', { workspace_ids: ['nowhere'] }, 'workspace_ids[0]'],
        ['POST', '/v1/providers', { name: 'p', workspace_id: 'default' }, 'integration_id'],
        ['POST', '/v1/providers', { integration_id: 'main', workspace_id: 'default' }, 'name'],
        ['POST', '/v1/providers', { name: 'p', integration_id: 'ghost', workspace_id: 'default' }, 'integration_id'],
        ['POST', '/v1/providers', { name: 'p', integration_id: 'main' }, 'workspace_id'],
        ['POST', '/v1/providers', { name: 'p', integration_id: 'main', workspace_id: 'default', slug: 'a/b' }, 'slug'],
        ['POST', '/v1/providers', { name: 'p', integration_id: 'main', workspace_id: 'default', expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
        ['POST', '/v1/providers', { name: 'p', integration_id: 'main', workspace_id: 'default', expires_at: 'tomorrow' }, 'expires_at'],
        ['PUT', '/v1/providers/main?workspace_id=default', { expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
        ['POST', '/v1/virtual-keys', { name: 'v', provider: 'nope', workspace_id: 'default' }, 'provider'],
        ['POST', '/v1/virtual-keys', { provider: 'openai', workspace_id: 'default' }, 'name'],
        ['POST', '/v1/virtual-keys', { name: 'v', provider: 'openai', workspace_id: 'default', resourceName: 'r' }, 'resourceName'],
        [
          'POST',
          '/v1/virtual-keys',
          { name: 'v', provider: 'openai', workspace_id: 'default', configurations: { custom_host: 'ftp://x' } },
          'configurations.custom_host',
        ],
      ];
      for (const [method, path, body, field] of cases) {
        const r = await admin(method, path, body);
        expect(r.status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.json)}`).toBe(400);
        expect(r.json.errorCode).toBe('AB01');
        expect(
          (r.json.errors as Problem[]).map((p) => p.path),
          `${JSON.stringify(body)}: ${JSON.stringify(r.json)}`,
        ).toContain(field);
      }
    });

    it('refuses taken slugs with AB07', async () => {
      expectProblem(await admin('POST', '/v1/integrations', { name: 'x', slug: 'main', ai_provider_id: 'openai' }), 409, 'AB07');
      expectProblem(await admin('POST', '/v1/providers', { name: 'x', slug: 'main', integration_id: 'main', workspace_id: 'default' }), 409, 'AB07');
    });
  });
});
