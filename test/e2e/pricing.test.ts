/**
 * Models and pricing end to end: the custom price admin routes, GET /v1/models on the gateway (the
 * official openai SDK and plain HTTP), and the cost of a real request through the pipeline.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { catalogModels } from '../../layers/core/src/pricing/catalog.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { keyRecord } from '../support/records.ts';
import { PATIENCE_MS } from '../support/until.ts';

const BASE = '/v1/model-configs/pricing';

describe.each(['direct', 'lambda'] as const)('models and pricing (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  /** Workspace key for the gateway, and keys with chosen scopes. */
  let gatewayKey: string;
  const records: GatewayRecord[] = [];

  const makeKey = async (scopes: string[], workspace: boolean) => {
    const made = keyRecord({ organisation_id: gw.boot.organisationId, workspace_id: workspace ? gw.boot.workspaceId : null, scopes }, gw.deps.clock.now());
    await gw.deps.repos.apiKeys.create(made.record);
    return made.key;
  };

  const models = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}${path}`, { headers: { 'x-gw-api-key': gatewayKey, ...headers } }).then(async (res) => ({
      status: res.status,
      json: (await res.json()) as Record<string, unknown>,
    }));

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    gatewayKey = await makeKey(['completions.write'], true);
    gw.deps.gatewayHooks.push({ name: 'capture', complete: (r) => void records.push(r) });
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  describe('custom prices', () => {
    it('sets, reads, lists and deletes an organisation price', async () => {
      const put = await gw.admin('PUT', `${BASE}/openai/gpt-4o`, { input_per_million: 3, output_per_million: 12 });
      expect(put.status).toBe(200);
      expect(put.json).toMatchObject({
        object: 'model-price',
        provider: 'openai',
        model: 'gpt-4o',
        workspace_id: null,
        input_per_million: 3,
        output_per_million: 12,
        cached_input_per_million: null,
      });

      const get = await gw.admin('GET', `${BASE}/openai/gpt-4o`);
      expect(get.status).toBe(200);
      expect(get.json.effective).toEqual({
        input_per_million: 3,
        output_per_million: 12,
        cached_input_per_million: 1.25,
        sources: { input_per_million: 'organisation', output_per_million: 'organisation', cached_input_per_million: 'catalog' },
      });
      expect(get.json.catalog).toMatchObject({ id: 'gpt-4o', input_per_million: 2.5, output_per_million: 10, context_window: 128000 });

      const list = await gw.admin('GET', `${BASE}?provider=openai`);
      expect(list.json).toMatchObject({ object: 'list', total: 1, data: [{ model: 'gpt-4o' }] });

      expect((await gw.admin('DELETE', `${BASE}/openai/gpt-4o`)).status).toBe(200);
      const again = await gw.admin('DELETE', `${BASE}/openai/gpt-4o`);
      expect(again.status).toBe(404);
      expect(again.json.errorCode).toBe('AB08');
      expect((await gw.admin('GET', `${BASE}/openai/gpt-4o`)).json.effective).toMatchObject({ input_per_million: 2.5 });
    });

    it('takes model ids with slashes as the rest of the path', async () => {
      const res = await gw.admin('PUT', `${BASE}/together-ai/meta-llama/Llama-3.3-70B-Instruct-Turbo`, { output_per_million: 1 });
      expect(res.status).toBe(200);
      expect(res.json.model).toBe('meta-llama/Llama-3.3-70B-Instruct-Turbo');
      const get = await gw.admin('GET', `${BASE}/together-ai/meta-llama/Llama-3.3-70B-Instruct-Turbo`);
      expect(get.json.effective).toMatchObject({ input_per_million: 0.88, output_per_million: 1 });
      await gw.admin('DELETE', `${BASE}/together-ai/meta-llama/Llama-3.3-70B-Instruct-Turbo`);
    });

    it('keeps a workspace override apart from the organisation price', async () => {
      await gw.admin('PUT', `${BASE}/openai/gpt-4o-mini`, { input_per_million: 1 });
      const ws = await gw.admin('PUT', `${BASE}/openai/gpt-4o-mini?workspace_id=default`, { input_per_million: 2 });
      expect(ws.status).toBe(200);
      expect(ws.json.workspace_id).toBe(gw.boot.workspaceId);
      const viaBody = await gw.admin('PUT', `${BASE}/openai/gpt-4o-mini`, { output_per_million: 5, workspace_id: 'default' });
      expect(viaBody.json.workspace_id).toBe(gw.boot.workspaceId);

      const get = await gw.admin('GET', `${BASE}/openai/gpt-4o-mini?workspace_id=default`);
      expect(get.json.effective).toMatchObject({
        input_per_million: 1,
        output_per_million: 5,
        sources: { input_per_million: 'organisation', output_per_million: 'workspace' },
      });
      expect((await gw.admin('GET', `${BASE}/openai/gpt-4o-mini`)).json.effective).toMatchObject({ input_per_million: 1, output_per_million: 0.6 });
      await gw.admin('DELETE', `${BASE}/openai/gpt-4o-mini?workspace_id=default`);
      await gw.admin('DELETE', `${BASE}/openai/gpt-4o-mini`);
    });

    it('refuses bad input with AB01 and the field path', async () => {
      const cases: Array<[string, unknown, string]> = [
        [`${BASE}/openai/gpt-4o`, { input_per_million: -1 }, 'input_per_million'],
        [`${BASE}/openai/gpt-4o`, { input_per_million: 'cheap' }, 'input_per_million'],
        [`${BASE}/no-such-provider/m`, { input_per_million: 1 }, 'provider'],
        [`${BASE}/openai/gpt-4o?workspace_id=a`, { input_per_million: 1, workspace_id: 'b' }, 'workspace_id'],
      ];
      for (const [path, body, field] of cases) {
        const res = await gw.admin('PUT', path, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.json.errorCode).toBe('AB01');
        expect((res.json.errors as Array<{ path: string }>).map((e) => e.path)).toContain(field);
      }
      const extra = await gw.admin('PUT', `${BASE}/openai/gpt-4o`, { input_per_million: 1, colour: 'red' });
      expect(extra.status).toBe(400);
      expect(String(extra.json.message)).toContain('colour');
      const empty = await gw.admin('PUT', `${BASE}/openai/gpt-4o`, {});
      expect(empty.status).toBe(400);
      expect(String(empty.json.message)).toContain('at least one');
      const noWs = await gw.admin('PUT', `${BASE}/openai/gpt-4o?workspace_id=nope`, { input_per_million: 1 });
      expect(noWs.status).toBe(404);
      expect(noWs.json.errorCode).toBe('AB08');
    });

    it('checks scopes and levels', async () => {
      const reader = await makeKey(['pricing.read'], true);
      const writer = await makeKey(['pricing.update', 'pricing.read'], true);
      const orgWriter = await makeKey(['pricing.update'], false);

      expect((await gw.admin('PUT', `${BASE}/openai/gpt-4o`, { input_per_million: 1 }, reader)).status).toBe(403);
      expect((await gw.admin('GET', `${BASE}/openai/gpt-4o`, undefined, gatewayKey)).status).toBe(403);
      expect((await gw.admin('GET', `${BASE}/openai/gpt-4o`, undefined, reader)).status).toBe(200);

      // Workspace keys price their own workspace only; organisation prices need an organisation key.
      const orgLevel = await gw.admin('PUT', `${BASE}/openai/gpt-4o`, { input_per_million: 1 }, writer);
      expect(orgLevel.status).toBe(403);
      expect(orgLevel.json.errorCode).toBe('AB03');
      expect((await gw.admin('PUT', `${BASE}/openai/gpt-4o?workspace_id=default`, { input_per_million: 1 }, writer)).status).toBe(200);
      expect((await gw.admin('PUT', `${BASE}/openai/gpt-4o`, { input_per_million: 1 }, orgWriter)).status).toBe(200);
      await gw.admin('DELETE', `${BASE}/openai/gpt-4o?workspace_id=default`);
      await gw.admin('DELETE', `${BASE}/openai/gpt-4o`);
    });
  });

  describe('GET /v1/models', () => {
    it('lists the catalog of the provider in OpenAI list shape, through the openai SDK', async () => {
      const client = new OpenAI({
        baseURL: `${gw.url}/v1`,
        apiKey: 'unused',
        maxRetries: 0,
        defaultHeaders: { 'x-gw-api-key': gatewayKey, 'x-gw-provider': 'groq' },
      });
      const ids: string[] = [];
      for await (const m of client.models.list()) {
        expect(m.object).toBe('model');
        expect(m.owned_by).toBe('groq');
        expect(typeof m.created).toBe('number');
        ids.push(m.id);
      }
      expect(ids).toContain('llama-3.3-70b-versatile');
      expect(ids.length).toBe(catalogModels('groq').length);
    });

    it('carries types, context window and the caller’s prices', async () => {
      const res = await models('/v1/models', { 'x-gw-provider': 'openai' });
      expect(res.status).toBe(200);
      const data = res.json.data as Array<Record<string, unknown>>;
      expect(data.find((m) => m.id === 'gpt-4o')).toMatchObject({
        endpoint_types: ['chat'],
        context_window: 128000,
        pricing: { input_per_million: 2.5, output_per_million: 10, cached_input_per_million: 1.25, currency: 'USD' },
      });
      expect(data.find((m) => m.id === 'text-embedding-3-small')).toMatchObject({ endpoint_types: ['embed'] });

      await gw.admin('PUT', `${BASE}/openai/gpt-4o?workspace_id=default`, { input_per_million: 4 });
      const custom = await models('/v1/models/gpt-4o', { 'x-gw-provider': 'openai' });
      expect(custom.json).toMatchObject({ id: 'gpt-4o', pricing: { input_per_million: 4, output_per_million: 10 } });
      await gw.admin('DELETE', `${BASE}/openai/gpt-4o?workspace_id=default`);
    });

    it('lists every provider without x-gw-provider, and follows x-gw-config', async () => {
      const all = await models('/v1/models');
      expect((all.json.data as unknown[]).length).toBe(catalogModels().length);
      const config = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: 'deepseek' }, { provider: 'openai' }] });
      const viaConfig = await models('/v1/models', { 'x-gw-config': config });
      expect(viaConfig.status).toBe(200);
      expect(new Set((viaConfig.json.data as Array<{ owned_by: string }>).map((m) => m.owned_by))).toEqual(new Set(['deepseek']));
    });

    it('retrieves one model, ids with slashes included', async () => {
      const res = await models('/v1/models/meta-llama/Llama-3.3-70B-Instruct-Turbo', { 'x-gw-provider': 'together-ai' });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ id: 'meta-llama/Llama-3.3-70B-Instruct-Turbo', object: 'model', owned_by: 'together-ai' });
      const dated = await models('/v1/models/gpt-4o-2024-08-06', { 'x-gw-provider': 'openai' });
      expect(dated.json.id).toBe('gpt-4o');
    });

    it('answers errors in OpenAI shape', async () => {
      const missing = await models('/v1/models/no-such-model', { 'x-gw-provider': 'openai' });
      expect(missing.status).toBe(404);
      expect(missing.json.error).toMatchObject({ param: 'model', code: 'model_not_found' });
      const unknown = await models('/v1/models', { 'x-gw-provider': 'nope' });
      expect(unknown.status).toBe(400);
      expect(unknown.json.error).toMatchObject({ param: 'x-gw-provider', code: 'invalid_value' });
      const anonymous = await fetch(`${gw.url}/v1/models`);
      expect(anonymous.status).toBe(401);
    });
  });

  describe('cost', () => {
    const chat = (headers: Record<string, string> = {}) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gw-api-key': gatewayKey,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
          authorization: 'Bearer sk-x',
          ...headers,
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
      });

    const lastRecord = async () => {
      await vi.waitFor(() => expect(records.length).toBeGreaterThan(0), { timeout: PATIENCE_MS });
      return records.pop()!;
    };

    it('prices a request from its usage and the effective price, in micro-dollars', async () => {
      records.length = 0;
      expect((await chat()).status).toBe(200);
      // The mock reports 9 prompt and 3 completion tokens: 9 * 0.15 + 3 * 0.6 = 3.15 micro-dollars.
      expect(await lastRecord()).toMatchObject({ provider: 'openai', usage: { prompt_tokens: 9, completion_tokens: 3 }, costMicros: 3 });

      await gw.admin('PUT', `${BASE}/openai/gpt-4o-mini`, { input_per_million: 100, output_per_million: 1000 });
      await chat();
      expect((await lastRecord()).costMicros).toBe(900 + 3000);

      await gw.admin('PUT', `${BASE}/openai/gpt-4o-mini?workspace_id=default`, { output_per_million: 2000 });
      await chat();
      expect((await lastRecord()).costMicros).toBe(900 + 6000);
      await gw.admin('DELETE', `${BASE}/openai/gpt-4o-mini?workspace_id=default`);
      await gw.admin('DELETE', `${BASE}/openai/gpt-4o-mini`);
    });
  });
});
