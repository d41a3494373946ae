/**
 * The end-to-end case through the real prompt store (DynamoDB Local): a prompt with a
 * partial, two versions and the `production` label renders and completes through the gateway
 * (openai SDK, with and without stream) over the prompt's own virtual key, and a missing variable
 * is a 422 naming it. Both local modes.
 */
import OpenAI from 'openai';
import type { Stream } from 'openai/streaming';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

type Json = Record<string, unknown>;

describe.each(['direct', 'lambda'] as const)('stored prompts rendered and completed (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let client: OpenAI;
  const last = (): Json => JSON.parse(mock.received.at(-1)?.body ?? '{}') as Json;
  const ok = async (method: string, path: string, body?: unknown): Promise<Json> => {
    const res = await gw.admin(method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.json)}`).toBe(200);
    return res.json;
  };

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    await ok('POST', '/v1/virtual-keys', {
      name: 'store vk',
      slug: 'vk-store',
      workspace_id: 'default',
      provider: 'openai',
      key: 'sk-store',
      configurations: { custom_host: `${mock.url}/v1` },
    });
    const collection = (await ok('POST', '/v1/collections', { name: 'Help desk', workspace_id: 'default' })).id;
    await ok('POST', '/v1/prompts/partials', { name: 'Signature', string: '-- the {{company}} team', workspace_id: 'default' });
    const messages = [
      { role: 'system', content: 'You answer for {{company}}. {{>signature}}' },
      { role: 'user', content: '{{question}}' },
    ];
    await ok('POST', '/v1/prompts', {
      name: 'Help reply',
      collection_id: collection,
      string: JSON.stringify(messages),
      parameters: { temperature: 0.2, max_tokens: 100 },
      model: 'gpt-4o-mini',
      virtual_key: 'vk-store',
    });
    await ok('PUT', '/v1/prompts/help-reply', { patch: true, string: JSON.stringify([{ role: 'user', content: 'Briefly, for {{company}}: {{question}}' }]) });
    await ok('PUT', '/v1/prompts/help-reply/versions/2', { label_id: 'production' });
    const key = await gw.workspaceKey(['completions.write']);
    client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('renders the published version with its partial, and the production label’s version', async () => {
    const variables = { company: 'Acme', question: 'Hours?' };
    expect((await ok('POST', '/v1/prompts/help-reply/render', { variables })).data).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0.2,
      max_tokens: 100,
      messages: [
        { role: 'system', content: 'You answer for Acme. -- the Acme team' },
        { role: 'user', content: 'Hours?' },
      ],
    });
    const labelled = await ok('POST', '/v1/prompts/help-reply@production/render', { variables, hyperparameters: { max_tokens: 10 } });
    expect(labelled.data).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0.2,
      max_tokens: 10,
      messages: [{ role: 'user', content: 'Briefly, for Acme: Hours?' }],
    });
  });

  it('completes the production version over the prompt’s virtual key, with and without stream', async () => {
    const answer = await client.post<ChatCompletion>('/prompts/help-reply@production/completions', {
      body: { variables: { company: 'Acme', question: 'Hours?' } },
    });
    expect(answer.object).toBe('chat.completion');
    expect(mock.received.at(-1)?.headers.authorization).toBe('Bearer sk-store');
    expect(last()).toEqual({ model: 'gpt-4o-mini', temperature: 0.2, max_tokens: 100, messages: [{ role: 'user', content: 'Briefly, for Acme: Hours?' }] });

    const stream = await client.post<Stream<ChatCompletionChunk>>('/prompts/help-reply/completions', {
      body: { variables: { company: 'Acme', question: 'Hours?' }, stream: true },
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello there');
    expect((last().messages as Json[])[0]).toEqual({ role: 'system', content: 'You answer for Acme. -- the Acme team' });
  });

  it('answers a missing variable with a 422 naming it', async () => {
    await expect(client.post('/prompts/help-reply/completions', { body: { variables: { question: 'Hours?' } } })).rejects.toMatchObject({
      status: 422,
      error: { param: 'variables.company', code: 'prompt_render_failed' },
    });
  });
});
