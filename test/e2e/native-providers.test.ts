/**
 * Native-format providers end to end: the official openai SDK against the local server (direct and
 * through the real Lambda handlers), each provider behind its mock speaking its own wire format.
 * For every one: chat, streams with and without the usage chunk (the record always gets the usage),
 * tool calls, an image input and error mapping; embeddings, rerank and images where the provider
 * has them; a fallback from a failing native provider to an OpenAI-wire one; a managed Bedrock
 * integration whose role is assumed with the gateway's own credentials (and a role in a header that
 * is not); `x-gw-cost` on non-streamed answers.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { findModel } from '../../layers/core/src/pricing/catalog.ts';
import { costMicrosOf, formatUsd } from '../../layers/core/src/pricing/cost.ts';
import { systemClock } from '../../layers/core/src/ports/clock.ts';
import { clearAwsCredentialCache, stsAssumeRole } from '../../layers/core/src/providers/native/aws.ts';
import type { AssumeRoleInput } from '../../layers/core/src/providers/transform.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { until } from '../support/until.ts';
import { ANTHROPIC_MODEL, anthropicErrorReply, startMockAnthropic } from '../support/mock-anthropic.ts';
import { AZURE_KEY, contentFilterError, startMockAzure } from '../support/mock-azure.ts';
import { BEDROCK_MODEL, KEYS, startMockBedrock, type MockBedrock } from '../support/mock-bedrock.ts';
import { COHERE_KEY, COHERE_MODEL, startMockCohere } from '../support/mock-cohere.ts';
import { GEMINI_MODEL, googleErrorReply, startMockGoogle, STUDIO_KEY, testServiceAccount } from '../support/mock-google.ts';
import type { MockServer, Recorded, Reply } from '../support/mock-http.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { conversation, PNG_BASE64, TEXT_ANSWER, TOOL_ANSWER } from '../support/native-fixtures.ts';

interface ExpectedError {
  reply: Reply;
  status: number;
  type: string;
  code?: string | RegExp;
  message: string;
}

interface NativeCase {
  id: string;
  model: string;
  key: string;
  mock: () => MockServer;
  host: () => string;
  headers?: Record<string, string>;
  /** Path and query the chat request must reach (non-streamed). */
  chatPath: string;
  error: ExpectedError;
}

const USER = [{ role: 'user' as const, content: 'Hi' }];

describe.each(['direct', 'lambda'] as const)('native providers (%s mode)', (mode) => {
  let gw: TestGantry;
  let wsKey: string;
  let anthropic: MockServer;
  let bedrock: MockBedrock;
  let google: MockServer;
  let azure: MockServer;
  let cohere: MockServer;
  let openai: MockOpenAI;
  const records: GatewayRecord[] = [];
  const hook: GatewayHook = { name: 'recorder', complete: (r) => void records.push(structuredClone({ ...r, principal: undefined })) };
  let trace = 0;

  const CASES: NativeCase[] = [
    {
      id: 'anthropic',
      model: ANTHROPIC_MODEL,
      key: 'sk-ant-test',
      mock: () => anthropic,
      host: () => `${anthropic.url}/v1`,
      chatPath: '/v1/messages',
      error: {
        reply: anthropicErrorReply(529, 'overloaded_error', 'Overloaded'),
        status: 529,
        type: 'api_error',
        code: 'overloaded_error',
        message: 'Overloaded',
      },
    },
    {
      id: 'bedrock',
      model: BEDROCK_MODEL,
      key: 'unused',
      mock: () => bedrock,
      host: () => bedrock.url,
      headers: { 'x-gw-aws-access-key-id': 'AKIDEXAMPLE', 'x-gw-aws-secret-access-key': KEYS.AKIDEXAMPLE!, 'x-gw-aws-region': 'us-west-2' },
      chatPath: `/model/${encodeURIComponent(BEDROCK_MODEL)}/converse`,
      error: {
        reply: {
          status: 429,
          headers: { 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
          json: { message: 'Too many requests, please wait before trying again.' },
        },
        status: 429,
        type: 'rate_limit_error',
        code: /throttlingexception/i,
        message: 'Too many requests, please wait before trying again.',
      },
    },
    {
      id: 'google',
      model: GEMINI_MODEL,
      key: STUDIO_KEY,
      mock: () => google,
      host: () => `${google.url}/v1beta`,
      chatPath: `/v1beta/models/${GEMINI_MODEL}:generateContent`,
      error: {
        reply: googleErrorReply(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).'),
        status: 429,
        type: 'rate_limit_error',
        code: 'RESOURCE_EXHAUSTED',
        message: 'Resource has been exhausted (e.g. check quota).',
      },
    },
    {
      id: 'vertex-ai',
      model: GEMINI_MODEL,
      key: 'ya29.user-supplied',
      mock: () => google,
      host: () => `${google.url}/v1/projects/gantry-test-project/locations/europe-west4`,
      headers: { 'x-gw-vertex-project-id': 'gantry-test-project', 'x-gw-vertex-region': 'europe-west4' },
      chatPath: `/v1/projects/gantry-test-project/locations/europe-west4/publishers/google/models/${GEMINI_MODEL}:generateContent`,
      error: {
        reply: googleErrorReply(503, 'UNAVAILABLE', 'The service is currently unavailable.'),
        status: 503,
        type: 'api_error',
        code: 'UNAVAILABLE',
        message: 'The service is currently unavailable.',
      },
    },
    {
      id: 'azure-openai',
      model: 'gpt-4o',
      key: AZURE_KEY,
      mock: () => azure,
      host: () => `${azure.url}/openai`,
      headers: { 'x-gw-azure-resource-name': 'gantry-test', 'x-gw-azure-deployment-id': 'gpt4o-prod' },
      chatPath: '/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21',
      error: {
        reply: { status: 400, json: contentFilterError },
        status: 400,
        type: 'invalid_request_error',
        code: 'content_filter',
        message: contentFilterError.error.message,
      },
    },
    {
      id: 'azure-ai',
      model: 'Meta-Llama-3.1-70B-Instruct',
      key: AZURE_KEY,
      mock: () => azure,
      host: () => `${azure.url}/models`,
      headers: { 'x-gw-azure-resource-name': 'gantry-foundry' },
      chatPath: '/models/chat/completions?api-version=2024-05-01-preview',
      error: { reply: { status: 502, text: '<html><body>Bad Gateway</body></html>' }, status: 502, type: 'api_error', message: 'Bad Gateway' },
    },
    {
      id: 'cohere',
      model: COHERE_MODEL,
      key: COHERE_KEY,
      mock: () => cohere,
      host: () => cohere.url,
      chatPath: '/v2/chat',
      error: {
        reply: { status: 429, json: { id: 'e-1', message: 'You are using a Trial key, which is limited to 10 API calls / minute.' } },
        status: 429,
        type: 'rate_limit_error',
        message: 'You are using a Trial key, which is limited to 10 API calls / minute.',
      },
    },
  ];

  const clientFor = (c: NativeCase, extra: Record<string, string> = {}) =>
    new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: c.key,
      maxRetries: 0,
      defaultHeaders: { 'x-gw-api-key': wsKey, 'x-gw-provider': c.id, 'x-gw-custom-host': c.host(), ...c.headers, ...extra },
    });

  /** A fresh trace id, whose record `recordOf` waits for. */
  const nextTrace = () => `native-${mode}-${++trace}`;
  const recordOf = (traceId: string): Promise<GatewayRecord> => until(() => records.find((r) => r.traceId === traceId), `the record of ${traceId}`);

  beforeAll(async () => {
    [gw, anthropic, bedrock, google, azure, cohere, openai] = await Promise.all([
      startGantry(mode),
      startMockAnthropic(),
      startMockBedrock(),
      startMockGoogle(testServiceAccount()),
      startMockAzure(),
      startMockCohere(),
      startMockOpenAI(),
    ]);
    wsKey = await gw.workspaceKey();
    gw.deps.gatewayHooks.push(hook);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), anthropic?.close(), bedrock?.close(), google?.close(), azure?.close(), cohere?.close(), openai?.close()]);
  });
  beforeEach(() => {
    for (const m of [anthropic, bedrock, google, azure, cohere]) {
      m.received.length = 0;
      m.queue.length = 0;
    }
    openai.received.length = 0;
    openai.queue.length = 0;
  });

  describe.each(CASES)('$id', (c) => {
    const lastBody = (): Record<string, unknown> => (c.mock().received.at(-1)?.json ?? {}) as Record<string, unknown>;

    it('answers a chat request in OpenAI shape, with usage, from the provider URL', async () => {
      const traceId = nextTrace();
      const res = await clientFor(c, { 'x-gw-trace-id': traceId })
        .chat.completions.create({ model: c.model, messages: [{ role: 'system', content: 'Be brief.' }, ...USER], max_tokens: 50 })
        .withResponse();
      expect(res.data.object).toBe('chat.completion');
      expect(res.data.choices[0]?.message).toMatchObject({ role: 'assistant', content: TEXT_ANSWER.text });
      expect(res.data.choices[0]?.finish_reason).toBe('stop');
      expect(res.data.usage).toMatchObject({
        prompt_tokens: TEXT_ANSWER.prompt,
        completion_tokens: TEXT_ANSWER.completion,
        total_tokens: TEXT_ANSWER.prompt + TEXT_ANSWER.completion,
      });
      expect(res.response.headers.get('x-gw-provider')).toBe(c.id);
      const got = c.mock().received.at(-1)!;
      expect(got.path).toBe(c.chatPath);
      expect(Object.keys(got.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
      expect(JSON.stringify(got.headers)).not.toContain(wsKey);
      const record = await recordOf(traceId);
      expect(record).toMatchObject({ endpoint: 'chatComplete', status: 200, provider: c.id, stream: false });
      expect(record.usage).toMatchObject({ prompt_tokens: TEXT_ANSWER.prompt, completion_tokens: TEXT_ANSWER.completion });
    });

    it('streams with stream_options.include_usage: role first, finish_reason last, then one usage chunk', async () => {
      const traceId = nextTrace();
      const stream = await clientFor(c, { 'x-gw-trace-id': traceId }).chat.completions.create({
        model: c.model,
        messages: USER,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      const withChoices = chunks.filter((ch) => ch.choices.length > 0);
      expect(withChoices[0]?.choices[0]?.delta.role).toBe('assistant');
      expect(withChoices.at(-1)?.choices[0]?.finish_reason).toBe('stop');
      expect(withChoices.map((ch) => ch.choices[0]?.delta.content ?? '').join('')).toBe(TEXT_ANSWER.text);
      const usageChunks = chunks.filter((ch) => ch.usage);
      expect(usageChunks).toHaveLength(1);
      expect(chunks.at(-1)).toBe(usageChunks[0]);
      expect(usageChunks[0]?.choices).toEqual([]);
      expect(usageChunks[0]?.usage).toMatchObject({ prompt_tokens: TEXT_ANSWER.prompt, completion_tokens: TEXT_ANSWER.completion });
      const record = await recordOf(traceId);
      expect(record).toMatchObject({ stream: true, status: 200, provider: c.id });
      expect(record.usage).toMatchObject({ prompt_tokens: TEXT_ANSWER.prompt, completion_tokens: TEXT_ANSWER.completion });
    });

    it('streams without the usage chunk when not asked, and still records the usage', async () => {
      const traceId = nextTrace();
      const stream = await clientFor(c, { 'x-gw-trace-id': traceId }).chat.completions.create({ model: c.model, messages: USER, stream: true });
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
      expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop');
      expect(chunks.filter((ch) => ch.usage)).toEqual([]);
      const record = await recordOf(traceId);
      expect(record.usage).toMatchObject({
        prompt_tokens: TEXT_ANSWER.prompt,
        completion_tokens: TEXT_ANSWER.completion,
        total_tokens: TEXT_ANSWER.prompt + TEXT_ANSWER.completion,
      });
    });

    it('calls tools (parallel calls, after a tool round trip), answered and streamed', async () => {
      const client = clientFor(c);
      const body = { ...conversation(c.model) } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
      const res = await client.chat.completions.create(body);
      expect(res.choices[0]?.finish_reason).toBe('tool_calls');
      const calls = res.choices[0]?.message.tool_calls ?? [];
      expect(calls.map((t) => (t.type === 'function' ? [t.function.name, JSON.parse(t.function.arguments) as unknown] : []))).toEqual(
        TOOL_ANSWER.calls.map((t) => [t.name, JSON.parse(t.arguments) as unknown]),
      );
      expect(calls.every((t) => typeof t.id === 'string' && t.id.length > 0)).toBe(true);
      expect(res.usage).toMatchObject({ prompt_tokens: TOOL_ANSWER.prompt, completion_tokens: TOOL_ANSWER.completion });

      const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
      const args: Record<number, { name: string; arguments: string }> = {};
      let finish: string | null | undefined;
      for await (const chunk of stream) {
        for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
          const slot = (args[tc.index] ??= { name: '', arguments: '' });
          slot.name += tc.function?.name ?? '';
          slot.arguments += tc.function?.arguments ?? '';
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(finish).toBe('tool_calls');
      expect(Object.values(args).map((a) => [a.name, JSON.parse(a.arguments) as unknown])).toEqual(
        TOOL_ANSWER.calls.map((t) => [t.name, JSON.parse(t.arguments) as unknown]),
      );
    });

    it('sends an image input in the provider format', async () => {
      const res = await clientFor(c).chat.completions.create({
        model: c.model,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is in this picture?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
            ],
          },
        ],
      });
      expect(res.choices[0]?.message.content).toBe(TEXT_ANSWER.text);
      const sent = JSON.stringify(lastBody());
      expect(sent).toContain(PNG_BASE64);
      expect(sent).toContain('What is in this picture?');
    });

    it('maps a provider error to OpenAI error shape with the provider status', async () => {
      c.mock().queue.push(c.error.reply);
      const traceId = nextTrace();
      const err = (await clientFor(c, { 'x-gw-trace-id': traceId })
        .chat.completions.create({ model: c.model, messages: USER })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect(err.status).toBe(c.error.status);
      expect(err.type).toBe(c.error.type);
      expect(err.message).toContain(c.error.message);
      if (typeof c.error.code === 'string') expect(err.code).toBe(c.error.code);
      else if (c.error.code) expect(String(err.code)).toMatch(c.error.code);
      expect((await recordOf(traceId)).status).toBe(c.error.status);
    });
  });

  it('signs Bedrock calls with SigV4 for the region of the request', async () => {
    await clientFor(CASES[1]!).chat.completions.create({ model: BEDROCK_MODEL, messages: USER });
    expect(bedrock.checks.at(-1)).toMatchObject({ ok: true, accessKeyId: 'AKIDEXAMPLE', region: 'us-west-2', service: 'bedrock' });
  });

  it('serves Claude on Vertex AI through rawPredict and streamRawPredict', async () => {
    const client = clientFor(CASES[3]!);
    const model = 'claude-sonnet-4-5@20250929';
    const res = await client.chat.completions.create({ model, messages: USER });
    expect(res.choices[0]?.message.content).toBe(TEXT_ANSWER.text);
    expect(google.received.at(-1)?.path).toBe(
      `/v1/projects/gantry-test-project/locations/europe-west4/publishers/anthropic/models/${encodeURIComponent(model)}:rawPredict`,
    );
    expect(google.received.at(-1)?.json).toMatchObject({ anthropic_version: 'vertex-2023-10-16' });
    const stream = await client.chat.completions.create({ model, messages: USER, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(TEXT_ANSWER.text);
    expect(usage).toMatchObject({ prompt_tokens: TEXT_ANSWER.prompt, completion_tokens: TEXT_ANSWER.completion });
    expect(google.received.at(-1)?.path).toMatch(/:streamRawPredict$/);
  });

  it('refuses a parameter a provider cannot take, naming it and the provider', async () => {
    const err = (await clientFor(CASES[0]!)
      .chat.completions.create({ model: ANTHROPIC_MODEL, messages: USER, seed: 7 })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err.status).toBe(400);
    expect(err.param).toBe('seed');
    expect(err.message).toContain('anthropic');
    expect(anthropic.received).toHaveLength(0);
  });

  it('answers 400 naming the provider and the endpoint it lacks', async () => {
    const res = await fetch(`${gw.url}/v1/moderations`, {
      method: 'POST',
      headers: { 'x-gw-api-key': wsKey, 'x-gw-provider': 'anthropic', authorization: 'Bearer sk-ant', 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'hello' }),
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string; param: string } };
    expect(error.param).toBe('x-gw-provider');
    expect(error.message).toBe('x-gw-provider: provider anthropic does not support the moderate endpoint');
  });

  describe('embeddings', () => {
    const EMBED: { id: string; model: string; case: () => NativeCase; vectors: number[][] }[] = [
      { id: 'bedrock (Titan)', model: 'amazon.titan-embed-text-v2:0', case: () => CASES[1]!, vectors: [[0.1, -0.2, 0.3]] },
      { id: 'google', model: 'text-embedding-004', case: () => CASES[2]!, vectors: [[0, 0.25]] },
      { id: 'vertex-ai', model: 'text-embedding-005', case: () => CASES[3]!, vectors: [[0, 0.75]] },
      { id: 'azure-openai', model: 'text-embedding-3-small', case: () => CASES[4]!, vectors: [[0, 0.5, -0.5]] },
      { id: 'azure-ai', model: 'text-embedding-3-small', case: () => CASES[5]!, vectors: [[0, 0.5, -0.5]] },
      { id: 'cohere', model: 'embed-v4.0', case: () => CASES[6]!, vectors: [[0, 0.1]] },
    ];
    it.each(EMBED)('$id, as float and as base64 (the SDK default)', async (e) => {
      const client = clientFor(e.case());
      const floats = await client.embeddings.create({ model: e.model, input: 'hello world', encoding_format: 'float' });
      expect(floats.object).toBe('list');
      expect(floats.data.map((d) => d.embedding)).toEqual(e.vectors);
      const decoded = await client.embeddings.create({ model: e.model, input: 'hello world' });
      expect(decoded.data.map((d) => Array.from(d.embedding, (x) => Math.round(x * 1000) / 1000))).toEqual(e.vectors);
    });
  });

  it('reranks with Cohere and Bedrock, most relevant first', async () => {
    for (const [c, model] of [
      [CASES[6]!, 'rerank-v3.5'],
      [CASES[1]!, 'amazon.rerank-v1:0'],
    ] as const) {
      const res = await fetch(`${gw.url}/v1/rerank`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': wsKey,
          'x-gw-provider': c.id,
          'x-gw-custom-host': c.host(),
          authorization: `Bearer ${c.key}`,
          'content-type': 'application/json',
          ...c.headers,
        },
        body: JSON.stringify({ model, query: 'capital of France', documents: ['Berlin is in Germany', 'Paris is the capital of France'] }),
      });
      expect(res.status, c.id).toBe(200);
      const body = (await res.json()) as { results: { index: number; relevance_score: number }[] };
      expect(body.results.map((r) => r.index)).toEqual([1, 0]);
    }
  });

  it('generates images with a Bedrock image model', async () => {
    const res = await clientFor(CASES[1]!).images.generate({
      model: 'amazon.titan-image-generator-v2:0',
      prompt: 'a lighthouse',
      n: 2,
      size: '1024x1024',
      response_format: 'b64_json',
    });
    expect(res.data?.map((d) => d.b64_json)).toEqual(['aW1n0', 'aW1n1']);
    expect((bedrock.received.at(-1)?.json as { imageGenerationConfig?: unknown }).imageGenerationConfig).toMatchObject({
      numberOfImages: 2,
      width: 1024,
      height: 1024,
    });
  });

  it("sends Azure's multipart endpoints byte for byte to the deployment, with the key in its header", async () => {
    const form = new FormData();
    form.set('model', 'whisper');
    form.set('file', new Blob([new Uint8Array([1, 2, 3, 4])], { type: 'audio/wav' }), 'hello.wav');
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': wsKey,
        'x-gw-provider': 'azure-openai',
        'x-gw-custom-host': `${azure.url}/openai`,
        'x-gw-azure-resource-name': 'gantry-test',
        authorization: `Bearer ${AZURE_KEY}`,
      },
      body: form,
    });
    expect(res.status).toBe(200);
    const got = azure.received.at(-1)!;
    expect(got.path).toBe('/openai/deployments/whisper/audio/transcriptions?api-version=2024-10-21');
    expect(got.headers['api-key']).toBe(AZURE_KEY);
    expect(got.headers.authorization).toBeUndefined();
    expect(String(got.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/);
    expect(got.body).toContain('filename="hello.wav"');
  });

  it('passes any other path through to a native provider, with its key in the provider format', async () => {
    const res = await fetch(`${gw.url}/v1/messages/batches?limit=2`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': wsKey,
        'x-gw-provider': 'anthropic',
        'x-gw-custom-host': `${anthropic.url}/v1`,
        authorization: 'Bearer sk-ant-batch',
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ requests: [] }),
    });
    expect(res.status).toBe(200);
    const got = anthropic.received.at(-1)!;
    expect(got.path).toBe('/v1/messages/batches?limit=2');
    expect(got.headers['x-api-key']).toBe('sk-ant-batch');
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['anthropic-version']).toBe('2023-06-01');
    expect(got.body).toBe('{"requests":[]}');
    expect(JSON.stringify(got.headers)).not.toContain(wsKey);
  });

  it('falls back from a failing native provider to an OpenAI-wire one', async () => {
    anthropic.queue.push(anthropicErrorReply(529, 'overloaded_error', 'Overloaded'));
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'anthropic', api_key: 'sk-ant-test', custom_host: `${anthropic.url}/v1` },
        { provider: 'openai', api_key: 'sk-openai-test', custom_host: `${openai.url}/v1` },
      ],
    };
    const client = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gw-api-key': wsKey, 'x-gw-config': JSON.stringify(config) },
    });
    const res = await client.chat.completions.create({ model: 'claude-or-gpt', messages: USER }).withResponse();
    expect(res.data.choices[0]?.message.content).toBe('Hello from the mock');
    expect(res.response.headers.get('x-gw-provider')).toBe('openai');
    expect(res.response.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    expect(anthropic.received).toHaveLength(1);
    expect(openai.received[0]?.headers.authorization).toBe('Bearer sk-openai-test');
  });

  describe('a managed Bedrock integration', () => {
    const ROLE = 'arn:aws:iam::123456789012:role/gantry-bedrock';
    const assumed: AssumeRoleInput[] = [];

    beforeAll(async () => {
      // The gateway's own credentials, as STS would see them: here the test key pair.
      gw.deps.assumeRole = (input) => {
        assumed.push(input);
        return stsAssumeRole({ clock: systemClock, authEndpoints: { sts: `${bedrock.url}/` } })({
          ...input,
          base: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: KEYS.AKIDEXAMPLE! },
        });
      };
      const integration = await gw.admin('POST', '/v1/integrations', {
        name: 'AWS',
        slug: 'aws-main',
        ai_provider_id: 'bedrock',
        configurations: { aws_region: 'eu-west-1', aws_auth_type: 'assumedRole', aws_role_arn: ROLE, custom_host: bedrock.url },
      });
      expect(integration.status, JSON.stringify(integration.json)).toBe(200);
      const provider = await gw.admin('POST', '/v1/providers', { name: 'AWS', slug: 'aws', integration_id: 'aws-main', workspace_id: 'default' });
      expect(provider.status, JSON.stringify(provider.json)).toBe(200);
    });
    beforeEach(() => {
      assumed.length = 0;
      clearAwsCredentialCache();
    });

    it('assumes the integration role with the gateway credentials, in the integration region', async () => {
      const client = new OpenAI({
        baseURL: `${gw.url}/v1`,
        apiKey: 'unused',
        maxRetries: 0,
        defaultHeaders: { 'x-gw-api-key': wsKey, 'x-gw-provider': '@aws', 'x-gw-aws-region': 'us-east-2' },
      });
      const res = await client.chat.completions.create({ model: BEDROCK_MODEL, messages: USER }).withResponse();
      expect(res.data.choices[0]?.message.content).toBe(TEXT_ANSWER.text);
      expect(res.response.headers.get('x-gw-provider')).toBe('bedrock');
      expect(assumed).toEqual([expect.objectContaining({ roleArn: ROLE, region: 'eu-west-1' })]);
      expect(assumed[0]?.base).toBeUndefined();
      const converse = bedrock.received.at(-1) as Recorded;
      expect(converse.path).toBe(`/model/${encodeURIComponent(BEDROCK_MODEL)}/converse`);
      expect(converse.headers['x-amz-security-token']).toBe('role-session-token');
      // The request's region header does not move the administrator's credentials elsewhere.
      expect(bedrock.checks.at(-1)).toMatchObject({ ok: true, accessKeyId: 'ASIAROLE', region: 'eu-west-1' });
    });

    it('never assumes a role a request names itself with the gateway credentials', async () => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': wsKey,
          'x-gw-provider': 'bedrock',
          'x-gw-custom-host': bedrock.url,
          'x-gw-aws-role-arn': ROLE,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: BEDROCK_MODEL, messages: USER }),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('aws_access_key_id');
      expect(assumed).toEqual([]);
      expect(bedrock.received).toHaveLength(0);
    });
  });

  it('calls a managed Azure OpenAI integration on the deployment of the model, whatever the headers say', async () => {
    const integration = await gw.admin('POST', '/v1/integrations', {
      name: 'Azure',
      slug: 'azure-main',
      ai_provider_id: 'azure-openai',
      key: AZURE_KEY,
      configurations: {
        azure_resource_name: 'gantry-test',
        azure_deployment_config: [
          { alias: 'gpt-4o', azure_deployment_name: 'gpt4o-prod-eu', azure_api_version: '2024-06-01', azure_model_slug: 'gpt-4o', is_default: true },
        ],
        custom_host: `${azure.url}/openai`,
      },
    });
    expect(integration.status, JSON.stringify(integration.json)).toBe(200);
    expect((await gw.admin('POST', '/v1/providers', { name: 'Azure', slug: 'azure', integration_id: 'azure-main', workspace_id: 'default' })).status).toBe(200);
    const client = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'not-the-key',
      maxRetries: 0,
      defaultHeaders: { 'x-gw-api-key': wsKey, 'x-gw-provider': '@azure', 'x-gw-azure-deployment-id': 'elsewhere' },
    });
    const res = await client.chat.completions.create({ model: 'gpt-4o', messages: USER }).withResponse();
    expect(res.data.choices[0]?.message.content).toBe(TEXT_ANSWER.text);
    expect(res.response.headers.get('x-gw-provider')).toBe('azure-openai');
    const got = azure.received.at(-1)!;
    expect(got.path).toBe('/openai/deployments/gpt4o-prod-eu/chat/completions?api-version=2024-06-01');
    expect(got.headers['api-key']).toBe(AZURE_KEY);
  });

  describe('x-gw-cost', () => {
    beforeAll(async () => {
      const put = await gw.admin('PUT', `/v1/model-configs/pricing/anthropic/${ANTHROPIC_MODEL}`, { input_per_million: 3, output_per_million: 15 });
      expect(put.status, JSON.stringify(put.json)).toBe(200);
    });

    it('is sent with a non-streamed answer of a priced model and matches the recorded cost', async () => {
      const traceId = nextTrace();
      const res = await clientFor(CASES[0]!, { 'x-gw-trace-id': traceId }).chat.completions.create({ model: ANTHROPIC_MODEL, messages: USER }).withResponse();
      // 20 prompt tokens at $3/M and 8 completion tokens at $15/M: 180 micro-dollars.
      expect(res.response.headers.get('x-gw-cost')).toBe('0.000180');
      expect((await recordOf(traceId)).costMicros).toBe(180);
    });

    it('is computed from the catalog for an OpenAI-wire provider', async () => {
      const traceId = nextTrace();
      const client = new OpenAI({
        baseURL: `${gw.url}/v1`,
        apiKey: 'sk-x',
        maxRetries: 0,
        defaultHeaders: { 'x-gw-api-key': wsKey, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${openai.url}/v1`, 'x-gw-trace-id': traceId },
      });
      const res = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: USER }).withResponse();
      const price = findModel('openai', 'gpt-4o-mini')!.price;
      const micros = costMicrosOf(price, { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 })!;
      expect(micros).toBeGreaterThan(0);
      expect(res.response.headers.get('x-gw-cost')).toBe(formatUsd(micros));
      expect((await recordOf(traceId)).costMicros).toBe(micros);
    });

    it('is not sent with a stream, whose cost is still recorded', async () => {
      const traceId = nextTrace();
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': wsKey,
          'x-gw-provider': 'anthropic',
          'x-gw-custom-host': `${anthropic.url}/v1`,
          authorization: 'Bearer sk-ant',
          'x-gw-trace-id': traceId,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: ANTHROPIC_MODEL, messages: USER, stream: true }),
      });
      await res.text();
      expect(res.headers.get('x-gw-cost')).toBeNull();
      expect((await recordOf(traceId)).costMicros).toBe(180);
    });

    it('is absent for a model without a price', async () => {
      const res = await clientFor(CASES[6]!).chat.completions.create({ model: COHERE_MODEL, messages: USER }).withResponse();
      expect(res.response.headers.get('x-gw-cost')).toBeNull();
    });
  });
});
