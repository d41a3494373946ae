import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { azureAI, azureOpenAI } from '../../../../../layers/core/src/providers/native/azure-openai.ts';
import { buildNativeRequest, callNative, type NativeOutcome } from '../../../../../layers/core/src/providers/native/call.ts';
import { openAIStream } from '../../../../../layers/core/src/providers/native/openai-stream.ts';
import { AZURE_KEY, azureStream, contentFilterError, ENTRA_TOKEN, startMockAzure } from '../../../../support/mock-azure.ts';
import type { MockServer } from '../../../../support/mock-http.ts';
import { assemble, checkStreamShape, ctxFor, localUpstream, parseSse, pieces, readText, runStream } from '../../../../support/native-harness.ts';
import { conversation, TEXT_ANSWER } from '../../../../support/native-fixtures.ts';

const OPTIONS = { azure_resource_name: 'my-openai', azure_deployment_id: 'gpt4o-prod' };
const chat = { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] };

describe('azure openai URLs and auth', () => {
  const build = (
    options: Record<string, unknown>,
    body: Record<string, unknown> = chat,
    endpoint: 'chatComplete' | 'embed' = 'chatComplete',
    apiKey: string | undefined = AZURE_KEY,
  ) => buildNativeRequest(azureOpenAI, endpoint, ctxFor(body, { options, apiKey }));

  it('uses the deployment URL with the GA api-version by default, or the one given', async () => {
    expect((await build(OPTIONS)).url.href).toBe('https://my-openai.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21');
    expect((await build({ ...OPTIONS, azure_api_version: '2025-04-01-preview' }, { model: 'e', input: 'x' }, 'embed')).url.href).toBe(
      'https://my-openai.openai.azure.com/openai/deployments/gpt4o-prod/embeddings?api-version=2025-04-01-preview',
    );
    expect((await build({ azure_resource_name: 'my-openai' })).url.pathname).toBe('/openai/deployments/gpt-4o/chat/completions');
  });

  it('uses the v1 API path when azure_api_version is v1', async () => {
    expect((await build({ ...OPTIONS, azure_api_version: 'v1' })).url.href).toBe('https://my-openai.openai.azure.com/openai/v1/chat/completions');
  });

  it('sends api-key, or an Entra ID bearer token', async () => {
    const key = await build(OPTIONS);
    expect(key.headers['api-key']).toBe(AZURE_KEY);
    expect(key.headers.authorization).toBeUndefined();
    const entra = await build({ ...OPTIONS, azure_ad_token: ENTRA_TOKEN }, chat, 'chatComplete', undefined);
    expect(entra.headers.authorization).toBe(`Bearer ${ENTRA_TOKEN}`);
    expect(entra.headers['api-key']).toBeUndefined();
    expect((await build({ ...OPTIONS, azure_auth_mode: 'entra' }, chat, 'chatComplete', ENTRA_TOKEN)).headers.authorization).toBe(`Bearer ${ENTRA_TOKEN}`);
  });

  it('refuses resource names and deployments that would change the host or path', async () => {
    await expect(build({ azure_resource_name: 'evil.com#' })).rejects.toMatchObject({ problems: [{ path: 'azure_resource_name' }] });
    await expect(build({ azure_resource_name: 'ok', azure_deployment_id: '../x' })).rejects.toMatchObject({ problems: [{ path: 'azure_deployment_id' }] });
    await expect(build({})).rejects.toMatchObject({ problems: [{ path: 'azure_resource_name' }] });
  });

  it('leaves the body as it is, except that streams ask for usage', async () => {
    const plain = await build(OPTIONS, conversation('gpt-4o'));
    expect(JSON.parse(String(plain.body))).toEqual(conversation('gpt-4o'));
    const streamed = await build(OPTIONS, { ...chat, stream: true });
    expect(JSON.parse(String(streamed.body)).stream_options).toEqual({ include_usage: true });
  });

  it('Azure AI Foundry: services.ai.azure.com/models, or an azure_endpoint on an Azure domain', async () => {
    const r = await buildNativeRequest(
      azureAI,
      'chatComplete',
      ctxFor(chat, { options: { azure_resource_name: 'my-foundry', azure_extra_parameters: 'pass-through' }, apiKey: AZURE_KEY }),
    );
    expect(r.url.href).toBe('https://my-foundry.services.ai.azure.com/models/chat/completions?api-version=2024-05-01-preview');
    expect(r.headers['extra-parameters']).toBe('pass-through');
    const custom = await buildNativeRequest(
      azureAI,
      'chatComplete',
      ctxFor(chat, { options: { azure_endpoint: 'https://llama-serverless.eastus2.models.ai.azure.com/' }, apiKey: AZURE_KEY }),
    );
    expect(custom.url.origin).toBe('https://llama-serverless.eastus2.models.ai.azure.com');
    await expect(buildNativeRequest(azureAI, 'chatComplete', ctxFor(chat, { options: { azure_endpoint: 'http://169.254.169.254/' } }))).rejects.toMatchObject({
      problems: [{ path: 'azure_endpoint' }],
    });
  });
});

describe('azure streams', () => {
  it.each([true, false])('keep usage for the log and show it to the client only when asked (include_usage %s)', (includeUsage) => {
    const body = { ...chat, stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) };
    // The request always asks Azure for usage, so the provider always sends it.
    const run = runStream(openAIStream(ctxFor(body)), pieces(azureStream(false, true), 17));
    checkStreamShape(run, includeUsage);
    expect(assemble(run.events).content).toBe(TEXT_ANSWER.text);
    expect(run.outcome).toMatchObject({
      usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 },
      finishReason: 'stop',
      model: 'gpt-4o-2024-11-20',
    });
  });

  it('keeps the prompt_filter_results chunk without strict compliance', () => {
    const run = runStream(openAIStream(ctxFor({ ...chat, stream: true }, { strictOpenAICompliance: false })), pieces(azureStream(false, true)));
    expect(run.events[0]).toHaveProperty('prompt_filter_results');
  });

  it('reports a stream that stops without finish_reason or [DONE]', () => {
    const run = runStream(openAIStream(ctxFor({ ...chat, stream: true })), pieces(azureStream(false, false).slice(0, 3)));
    expect(run.outcome.error?.error.code).toBe('stream_truncated');
    expect(run.done).toBe(true);
  });
});

describe('azure over HTTP', () => {
  let mock: MockServer;
  const up = localUpstream();
  beforeAll(async () => {
    mock = await startMockAzure();
  });
  afterAll(async () => {
    up.close();
    await mock.close();
  });
  const call = (body: Record<string, unknown>, over: Parameters<typeof ctxFor>[1] = {}, onOutcome?: (o: NativeOutcome) => void) =>
    callNative({
      provider: azureOpenAI,
      endpoint: 'chatComplete',
      ctx: ctxFor(body, { options: OPTIONS, apiKey: AZURE_KEY, ...over }),
      send: up.send,
      baseUrl: `${mock.url}/openai`,
      onOutcome,
    });

  it('chat and tool calls pass through with the deployment path and api-key', async () => {
    const answer = await call(conversation('gpt-4o'));
    expect(mock.received.at(-1)!.path).toBe('/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21');
    expect(mock.received.at(-1)!.headers['api-key']).toBe(AZURE_KEY);
    const json = JSON.parse(await readText(answer));
    expect(json.choices[0].message.tool_calls).toHaveLength(2);
    expect(json.prompt_filter_results).toBeDefined();
  });

  it('streams with usage reported although the client did not ask', async () => {
    let outcome: NativeOutcome | undefined;
    const answer = await call({ ...chat, stream: true }, {}, (o) => (outcome = o));
    const { events, done } = parseSse(await readText(answer));
    expect(done).toBe(true);
    expect(events.some((e) => e.usage)).toBe(false);
    expect(outcome?.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8 });
  });

  it('keeps Azure content-filter errors (status, code, details)', async () => {
    const answer = await call({ ...chat, messages: [{ role: 'user', content: 'something violent' }] });
    expect(answer.status).toBe(400);
    const body = JSON.parse(await readText(answer));
    expect(body.error).toMatchObject({ code: 'content_filter', type: 'invalid_request_error', param: 'prompt', message: contentFilterError.error.message });
    expect(body.error.innererror.code).toBe('ResponsibleAIPolicyViolation');
  });

  it('maps an Azure auth failure to an OpenAI 401', async () => {
    const answer = await call(chat, { apiKey: 'wrong' });
    expect(answer.status).toBe(401);
    expect(JSON.parse(await readText(answer)).error).toMatchObject({ type: 'authentication_error', code: '401' });
  });
});
