/**
 * Prompts rendered and completed through the local server in both modes (so through the real
 * Lambda handlers too: render on the admin function, completions streamed by the gateway
 * function), driven by the openai SDK against a mock provider. Prompts come from a test double of
 * `PromptSource`: the prompt resource implements the same contract over the store.
 */
import OpenAI from 'openai';
import type { Stream } from 'openai/streaming';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { waitFor } from '../support/observability.ts';
import { partialVersion, promptVersion, PromptsDouble } from '../support/prompts.ts';

type Json = Record<string, unknown>;

const MESSAGES = JSON.stringify([
  { role: 'system', content: 'You answer for {{company}}. {{>signature}}' },
  { role: 'user', content: '{{question}}' },
]);

/** The production version's messages for company Acme and the question "Hours?". */
const ACME_HOURS = [
  { role: 'system', content: 'You answer for Acme. -- Acme support' },
  { role: 'user', content: 'Hours?' },
];

describe.each(['direct', 'lambda'] as const)('prompt render and completions (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  const last = (): Json => JSON.parse(mock.received.at(-1)?.body ?? '{}') as Json;
  const routeHeaders = () => ({ 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` });
  const sdk = (headers: Record<string, string> = routeHeaders()) =>
    new OpenAI({ apiKey: 'sk-provider', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gw-api-key': key, ...headers } });

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    key = await gw.workspaceKey(['completions.write']);
    const vk = await gw.admin('POST', '/v1/virtual-keys', {
      name: 'prompt vk',
      slug: 'vk-prompt',
      workspace_id: 'default',
      provider: 'openai',
      key: 'sk-from-vk',
      configurations: { custom_host: `${mock.url}/v1` },
    });
    expect(vk.status).toBe(200);
    const prompts = new PromptsDouble(
      [
        promptVersion({
          promptId: 'pr-support',
          slug: 'support',
          version: 1,
          template: MESSAGES,
          model: 'gpt-4o-mini',
          parameters: { temperature: 0.3, max_tokens: 64 },
          provider: 'vk-prompt',
        }),
        promptVersion({
          promptId: 'pr-support',
          slug: 'support',
          version: 2,
          template: 'Answer briefly: {{question}}',
          model: 'gpt-4o',
          provider: 'vk-prompt',
        }),
      ],
      [partialVersion('signature', '-- {{company}} support')],
    );
    prompts.pointers.set('support@production', 1);
    gw.deps.prompts = prompts;
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.queue.length = 0;
  });

  it('renders a labelled version through the admin API: {success, data} with parameters under hyperparameters', async () => {
    const res = await gw.admin('POST', '/v1/prompts/support@production/render', {
      variables: { company: 'Acme', question: 'Hours?' },
      hyperparameters: { temperature: 1 },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      success: true,
      data: {
        model: 'gpt-4o-mini',
        temperature: 1,
        max_tokens: 64,
        messages: ACME_HOURS,
      },
    });
  });

  it('takes render hyperparameters at the root as the reference sends them, those under hyperparameters winning', async () => {
    const res = await gw.admin('POST', '/v1/prompts/support@production/render', {
      variables: { company: 'Acme', question: 'Hours?' },
      temperature: 0.5,
      max_tokens: 10,
      hyperparameters: { max_tokens: 12 },
    });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.5, max_tokens: 12, messages: ACME_HOURS });
  });

  it('refuses a render with missing variables as a 422 listing each, and a body without variables as a 400', async () => {
    const missing = await gw.admin('POST', '/v1/prompts/support@1/render', { variables: { question: 'Hours?' } });
    expect(missing.status).toBe(422);
    expect(missing.json).toMatchObject({ object: 'error', errorCode: 'AB01', errors: [{ path: 'variables.company', message: 'is missing' }] });
    const lenient = await gw.admin('POST', '/v1/prompts/support@1/render', { variables: { question: 'Hours?' }, lenient: true });
    expect(lenient.status).toBe(200);
    expect((lenient.json.data as Json).messages).toEqual([
      { role: 'system', content: 'You answer for . --  support' },
      { role: 'user', content: 'Hours?' },
    ]);
    const noVariables = await gw.admin('POST', '/v1/prompts/support/render', { hyperparameters: {} });
    expect(noVariables.status).toBe(400);
    expect(noVariables.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'variables' }] });
    const unknown = await gw.admin('POST', '/v1/prompts/nope/render', { variables: {} });
    expect(unknown.status).toBe(404);
  });

  it('completes a prompt through the openai SDK, the request naming the provider; the log names the prompt', async () => {
    const traceId = `prompt-${mode}-${Date.now()}`;
    const answer = await sdk({ ...routeHeaders(), 'x-gw-trace-id': traceId }).post<ChatCompletion>('/prompts/support@production/completions', {
      body: { variables: { company: 'Acme', question: 'Hours?' }, max_tokens: 20 },
    });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    expect(mock.received.at(-1)?.path).toBe('/v1/chat/completions');
    expect(mock.received.at(-1)?.headers.authorization).toBe('Bearer sk-provider');
    expect(last()).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0.3,
      max_tokens: 20,
      messages: ACME_HOURS,
    });
    const row = await waitFor(gw.deps, async () => {
      const res = await gw.admin('GET', `/v1/logs?workspace_id=default&trace_id=${traceId}`);
      return (res.json.data as Json[] | undefined)?.[0];
    });
    const log = (await gw.admin('GET', `/v1/logs/${String(row.id)}`)).json;
    expect(log).toMatchObject({
      prompt_id: 'pr-support',
      prompt_version: 1,
      prompt_version_id: 'pr-support-v1',
      prompt_slug: 'support',
      metadata: { _prompt: 'support' },
      status_code: 200,
    });
  });

  it('streams a prompt completion through the openai SDK over the prompt’s own provider (its virtual key)', async () => {
    const stream = await sdk({}).post<Stream<ChatCompletionChunk>>('/prompts/support@2/completions', {
      body: { variables: { question: 'Hours?' }, stream: true },
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('Hello there');
    expect(mock.received.at(-1)?.headers.authorization).toBe('Bearer sk-from-vk');
    expect(last()).toEqual({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'Answer briefly: Hours?' }] });
  });

  it('answers a missing variable on completions with a 422 in OpenAI’s shape naming it, before any provider call', async () => {
    const before = mock.received.length;
    const call = (body: Json) =>
      fetch(`${gw.url}/v1/prompts/support/completions`, {
        method: 'POST',
        headers: { 'x-gw-api-key': key, 'content-type': 'application/json', ...routeHeaders() },
        body: JSON.stringify(body),
      });
    const res = await call({ variables: {} });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { error: Json };
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'variables.question', code: 'prompt_render_failed' });
    expect(mock.received.length).toBe(before);
    const bad = await call({ variables: 'no' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: Json }).error).toMatchObject({ param: 'variables' });
  });

  it('takes the Responses API’s prompt {id, version, variables}: the prompt’s messages start the input', async () => {
    const answer = await sdk().responses.create({
      prompt: { id: 'support', version: '2', variables: { question: 'Hours?' } },
      input: 'And on Sunday?',
    });
    expect(answer.output_text).toBe('Hello');
    expect(mock.received.at(-1)?.path).toBe('/v1/responses');
    expect(last()).toEqual({
      model: 'gpt-4o',
      input: [
        { role: 'user', content: 'Answer briefly: Hours?' },
        { role: 'user', content: 'And on Sunday?' },
      ],
    });
  });

  it('sends a Responses prompt Gantry does not know on untouched (the provider’s own hosted prompt)', async () => {
    await sdk().responses.create({ model: 'gpt-4o', prompt: { id: 'pmpt_hosted', version: '3', variables: { a: 'b' } }, input: 'Hi' });
    expect(last()).toEqual({ model: 'gpt-4o', prompt: { id: 'pmpt_hosted', version: '3', variables: { a: 'b' } }, input: 'Hi' });
  });
});
