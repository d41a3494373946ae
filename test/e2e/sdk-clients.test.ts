/**
 * Popular clients pointed at Gantry as their own docs say, unmodified, in both modes: the openai
 * SDK with nothing but `baseURL` and `apiKey` (the gateway key) when the workspace has a managed
 * provider, its `organization` and `project` options, Responses pricing and current moderation
 * models; the `portkey-ai` SDK through the `x-portkey-` header alias; a managed provider's models.
 */
import OpenAI from 'openai';
import { Portkey } from 'portkey-ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { costMicrosOf, formatUsd } from '../../layers/core/src/pricing/cost.ts';
import { findModel } from '../../layers/core/src/pricing/catalog.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';
import { MOCK_MODELS, RESPONSE_USAGE, startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;
const KEY = 'sk-managed-sdk-0123456789abcdefghijklmnopqrstuvwxyz';
const VK_KEY = 'sk-virtual-sdk-9876543210zyxwvutsrqponmlkjihgfedcba';
const MSG = [{ role: 'user' as const, content: 'Hi' }];

describe.each(['direct', 'lambda'] as const)('SDK clients (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let wsKey: string;

  const ok = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const r = await gw.admin(method, path, body);
    expect(r.status, `${method} ${path}: ${JSON.stringify(r.json)}`).toBe(200);
    return r.json;
  };
  const lastReceived = () => {
    const r = mock.received.at(-1);
    if (!r) throw new Error('the mock received nothing');
    return r;
  };
  const sdk = (extra: ConstructorParameters<typeof OpenAI>[0] = {}) => new OpenAI({ apiKey: wsKey, baseURL: `${gw.url}/v1`, maxRetries: 0, ...extra });

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    wsKey = await gw.workspaceKey(['completions.write']);
    const integration = { ai_provider_id: 'openai', key: KEY, configurations: { custom_host: `${mock.url}/v1` } };
    await ok('POST', '/v1/integrations', { name: 'Main', slug: 'main', ...integration });
    await ok('POST', '/v1/integrations', { name: 'Narrow', slug: 'narrow', ...integration, allowed_models: ['gpt-4o-mini', 'gpt-4o'] });
    await ok('POST', '/v1/providers', { name: 'Main', slug: 'main', integration_id: 'main', workspace_id: 'default' });
    await ok('POST', '/v1/providers', { name: 'Narrow', slug: 'narrow', integration_id: 'narrow', workspace_id: 'default' });
    await ok('POST', '/v1/virtual-keys', {
      name: 'legacy',
      slug: 'vk-sdk',
      workspace_id: 'default',
      provider: 'openai',
      key: VK_KEY,
      configurations: { custom_host: `${mock.url}/v1` },
    });
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  describe('the gateway key as the SDK apiKey (Authorization: Bearer)', () => {
    it('calls a managed provider with only baseURL and apiKey; the gateway key never reaches the provider', async () => {
      const answer = await sdk().chat.completions.create({ model: '@main/gpt-4o-mini', messages: MSG });
      expect(answer.choices[0]?.message.content).toBe('Hello from the mock');
      expect(lastReceived().headers.authorization).toBe(`Bearer ${KEY}`);
      expect(JSON.stringify(lastReceived().headers)).not.toContain(wsKey);
    });

    it('works on every route: embeddings, a streamed chat, a virtual key, a config with api_key, the passthrough', async () => {
      await sdk({ defaultHeaders: { 'x-gw-provider': '@main' } }).embeddings.create({ model: 'text-embedding-3-small', input: 'abc' });
      expect(lastReceived().headers.authorization).toBe(`Bearer ${KEY}`);

      const stream = await sdk().chat.completions.create({ model: '@main/gpt-4o-mini', messages: MSG, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('Hello there');

      await sdk({ defaultHeaders: { 'x-gw-virtual-key': 'vk-sdk' } }).chat.completions.create({ model: 'gpt-4o-mini', messages: MSG });
      expect(lastReceived().headers.authorization).toBe(`Bearer ${VK_KEY}`);

      const config = JSON.stringify({ provider: 'openai', api_key: 'sk-from-config', custom_host: `${mock.url}/v1` });
      await sdk({ defaultHeaders: { 'x-gw-config': config } }).chat.completions.create({ model: 'gpt-4o-mini', messages: MSG });
      expect(lastReceived().headers.authorization).toBe('Bearer sk-from-config');

      const proxied = await fetch(`${gw.url}/v1/some/provider/path`, { headers: { authorization: `Bearer ${wsKey}`, 'x-gw-provider': '@main' } });
      expect(proxied.status).toBe(200);
      expect(lastReceived().path).toBe('/v1/some/provider/path');
      expect(lastReceived().headers.authorization).toBe(`Bearer ${KEY}`);
    });

    it('never forwards a gw_ bearer, even beside x-gw-api-key', async () => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': wsKey,
          authorization: `Bearer ${wsKey}`,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: MSG }),
      });
      expect(res.status).toBe(200);
      expect(lastReceived().headers.authorization).toBeUndefined();
    });

    it('is refused as any bad key is (401), and a provider key in Bearer still needs x-gw-api-key', async () => {
      await expect(
        new OpenAI({ apiKey: 'gw_not-a-key', baseURL: `${gw.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: '@main/gpt-4o-mini', messages: MSG }),
      ).rejects.toMatchObject({
        status: 401,
      });
      await expect(
        new OpenAI({ apiKey: 'sk-provider', baseURL: `${gw.url}/v1`, maxRetries: 0 }).chat.completions.create({ model: '@main/gpt-4o-mini', messages: MSG }),
      ).rejects.toMatchObject({
        status: 401,
        error: { message: expect.stringContaining('x-gw-api-key') },
      });
    });

    it('admin routes accept a gw_ key as Authorization: Bearer', async () => {
      const res = await fetch(`${gw.url}/v1/workspaces`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { object: string }).object).toBe('list');
      const bad = await fetch(`${gw.url}/v1/workspaces`, { headers: { authorization: 'Bearer gw_wrong' } });
      expect(bad.status).toBe(401);
      expect(JSON.stringify(await bad.json())).not.toContain('JWT authentication is not enabled');
    });
  });

  describe('GET /v1/models for a managed provider', () => {
    it("lists the integration's allowed models", async () => {
      const list = await sdk({ defaultHeaders: { 'x-gw-provider': '@narrow' } }).models.list();
      expect(list.data.map((m) => m.id)).toEqual(['gpt-4o-mini', 'gpt-4o']);
      expect(mock.received).toHaveLength(0);
    });

    it("else the provider's own /models, called with the stored key", async () => {
      const list = await sdk({ defaultHeaders: { 'x-gw-provider': '@main' } }).models.list();
      expect(list.data.map((m) => m.id)).toEqual([...MOCK_MODELS]);
      expect(lastReceived().path).toBe('/v1/models');
      expect(lastReceived().headers.authorization).toBe(`Bearer ${KEY}`);
      const config = JSON.stringify({ provider: '@main' });
      const viaConfig = await sdk({ defaultHeaders: { 'x-gw-config': config } }).models.list();
      expect(viaConfig.data.map((m) => m.id)).toEqual([...MOCK_MODELS]);
    });

    it('else the catalog of its kind; an unknown slug is a 400 naming the header', async () => {
      mock.queue.push({ kind: 'error', status: 500, body: '{}' });
      const list = await sdk({ defaultHeaders: { 'x-gw-provider': '@main' } }).models.list();
      const ids = list.data.map((m) => m.id);
      expect(ids).toContain('gpt-4o-mini');
      expect(list.data.every((m) => (m as unknown as { provider: string }).provider === 'openai')).toBe(true);
      await expect(sdk({ defaultHeaders: { 'x-gw-provider': '@nope' } }).models.list()).rejects.toMatchObject({ status: 400, param: 'x-gw-provider' });
    });
  });

  describe('openai SDK options and endpoints', () => {
    it('sends organization and project to OpenAI, never to another provider', async () => {
      const headers = { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` };
      const opts = { organization: 'org-123', project: 'proj_abc' };
      await new OpenAI({
        apiKey: 'sk-x',
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
        defaultHeaders: { ...headers, 'x-gw-api-key': wsKey },
        ...opts,
      }).chat.completions.create({
        model: 'gpt-4o-mini',
        messages: MSG,
      });
      expect(lastReceived().headers['openai-organization']).toBe('org-123');
      expect(lastReceived().headers['openai-project']).toBe('proj_abc');
      const groq = { 'x-gw-provider': 'groq', 'x-gw-custom-host': `${mock.url}/v1`, 'x-gw-api-key': wsKey };
      await new OpenAI({ apiKey: 'sk-x', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: groq, ...opts }).chat.completions.create({
        model: 'llama-3.1-8b-instant',
        messages: MSG,
      });
      expect(lastReceived().headers['openai-organization']).toBeUndefined();
      expect(lastReceived().headers['openai-project']).toBeUndefined();
    });

    it('prices /v1/responses from input_tokens and output_tokens, streamed too', async () => {
      const price = findModel('openai', 'gpt-4o')?.price;
      if (!price) throw new Error('gpt-4o has no catalog price');
      const expected = costMicrosOf(price, {
        prompt_tokens: RESPONSE_USAGE.input_tokens,
        completion_tokens: RESPONSE_USAGE.output_tokens,
        total_tokens: RESPONSE_USAGE.total_tokens,
      });
      expect(expected).toBeGreaterThan(0);
      const res = await sdk().responses.create({ model: '@main/gpt-4o', input: 'Hi' }).withResponse();
      expect(res.data.usage?.input_tokens).toBe(RESPONSE_USAGE.input_tokens);
      expect(res.response.headers.get('x-gw-cost')).toBe(formatUsd(expected ?? 0));

      const stream = await sdk({ defaultHeaders: { 'x-gw-trace-id': `${mode}-responses-stream` } }).responses.create({
        model: '@main/gpt-4o',
        input: 'Hi',
        stream: true,
      });
      const types: string[] = [];
      for await (const e of stream) types.push(e.type);
      expect(types.at(-1)).toBe('response.completed');
      const row = await waitFor(gw.deps, async () => {
        const r = await gw.admin('GET', `/v1/logs?workspace_id=default&trace_id=${mode}-responses-stream`);
        return (r.json.data as Json[] | undefined)?.[0];
      });
      expect(row.prompt_tokens).toBe(RESPONSE_USAGE.input_tokens);
      expect(row.completion_tokens).toBe(RESPONSE_USAGE.output_tokens);
      expect(row.cost_micros).toBe(expected);
    });

    it("accepts omni-moderation-latest, keeping the contract's default", async () => {
      const client = sdk({ defaultHeaders: { 'x-gw-provider': '@main' } });
      await client.moderations.create({ model: 'omni-moderation-latest', input: 'hello' });
      expect(JSON.parse(lastReceived().body)).toEqual({ model: 'omni-moderation-latest', input: 'hello' });
      await client.moderations.create({ input: 'hello' });
      expect(JSON.parse(lastReceived().body).model).toBe('text-moderation-latest');
    });
  });

  describe('the portkey-ai SDK, unmodified, through the x-portkey- alias', () => {
    it('chats through a managed provider and reads the answer headers under its own prefix', async () => {
      const portkey = new Portkey({ apiKey: wsKey, baseURL: `${gw.url}/v1`, provider: '@main', traceID: `${mode}-portkey`, metadata: { team: 'moved' } });
      const answer = await portkey.chat.completions.create({ model: 'gpt-4o-mini', messages: MSG });
      expect(answer.choices?.[0]?.message?.content).toBe('Hello from the mock');
      const got = lastReceived();
      expect(got.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(Object.keys(got.headers).filter((h) => h.startsWith('x-portkey-') || h.startsWith('x-gw-'))).toEqual([]);
      const row = await waitFor(gw.deps, async () => {
        const r = await gw.admin('GET', `/v1/logs?workspace_id=default&trace_id=${mode}-portkey`);
        return (r.json.data as Json[] | undefined)?.[0];
      });
      expect(row.metadata).toMatchObject({ team: 'moved' });
    });

    it('answers x-portkey-* headers to x-portkey-* requests, x-gw-* to the rest, on gateway and admin routes', async () => {
      const headers = { 'x-portkey-api-key': wsKey, 'x-portkey-provider': '@main', 'x-portkey-trace-id': 'pk-trace', 'content-type': 'application/json' };
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'gpt-4o-mini', messages: MSG }) });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-portkey-trace-id')).toBe('pk-trace');
      expect(res.headers.get('x-portkey-provider')).toBe('openai');
      expect(res.headers.get('x-portkey-log-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect([...res.headers.keys()].filter((h) => h.startsWith('x-gw-'))).toEqual([]);

      const refused = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'x-portkey-api-key': 'gw_wrong' }, body: '{}' });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('x-portkey-trace-id')).toBe('pk-trace');

      const admin = await fetch(`${gw.url}/v1/workspaces`, { headers: { 'x-portkey-api-key': ADMIN_KEY } });
      expect(admin.status).toBe(200);
      expect(admin.headers.get('x-portkey-request-id')).toBeTruthy();

      const plain = await fetch(`${gw.url}/v1/workspaces`, { headers: { 'x-gw-api-key': ADMIN_KEY } });
      expect(plain.headers.get('x-gw-request-id')).toBeTruthy();
      expect(plain.headers.get('x-portkey-request-id')).toBeNull();
    });
  });
});
