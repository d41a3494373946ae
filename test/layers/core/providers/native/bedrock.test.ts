import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../../layers/core/src/http/errors.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { clearAwsCredentialCache } from '../../../../../layers/core/src/providers/native/aws.ts';
import { bedrock, converseStream } from '../../../../../layers/core/src/providers/native/bedrock.ts';
import { buildNativeRequest, callNative, type NativeOutcome } from '../../../../../layers/core/src/providers/native/call.ts';
import { EventStreamDecoder } from '../../../../../layers/core/src/providers/native/event-stream.ts';
import type { AssumeRoleInput } from '../../../../../layers/core/src/providers/transform.ts';
import {
  BEDROCK_MODEL,
  event,
  exception,
  frame,
  startMockBedrock,
  textConverse,
  textFrames,
  toolConverse,
  toolFrames,
  verifySigV4,
  type MockBedrock,
} from '../../../../support/mock-bedrock.ts';
import { assemble, checkStreamShape, ctxFor, localUpstream, parseSse, pieces, readText, runStream, T0 } from '../../../../support/native-harness.ts';
import { conversation, PNG_BASE64, TEXT_ANSWER, WEATHER_TOOL } from '../../../../support/native-fixtures.ts';

const KEYS = { aws_access_key_id: 'AKIDEXAMPLE', aws_secret_access_key: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', aws_region: 'us-west-2' };
const req = (
  body: Record<string, unknown>,
  over: Parameters<typeof ctxFor>[1] = {},
  endpoint: 'chatComplete' | 'embed' | 'rerank' | 'imageGenerate' = 'chatComplete',
) => bedrock.transformRequest!(endpoint, body, ctxFor(body, over)) as Record<string, any>;
const res = (
  json: unknown,
  body: Record<string, unknown> = { model: BEDROCK_MODEL, messages: [] },
  endpoint: 'chatComplete' | 'embed' | 'rerank' | 'imageGenerate' = 'chatComplete',
  headers = {},
) => bedrock.transformResponse!(endpoint, json, ctxFor(body), { headers }) as Record<string, any>;

describe('bedrock Converse request', () => {
  it('maps system, turns, tool round trip and tools', () => {
    const body = req(conversation(BEDROCK_MODEL));
    expect(body).toEqual({
      system: [{ text: 'You are a weather bot.' }],
      messages: [
        { role: 'user', content: [{ text: 'What is the weather in Paris?' }] },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'call_paris', name: 'get_weather', input: { city: 'Paris' } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: 'call_paris', content: [{ text: '{"temp_c":18}' }] } }] },
        { role: 'assistant', content: [{ text: 'It is 18°C in Paris.' }] },
        { role: 'user', content: [{ text: 'And in Rome and Milan?' }] },
      ],
      toolConfig: {
        tools: [{ toolSpec: { name: 'get_weather', description: 'Current weather for a city', inputSchema: { json: WEATHER_TOOL.function.parameters } } }],
      },
    });
  });

  it('maps inference settings, tool_choice, images, cache points, thinking and extras', () => {
    const body = req(
      {
        model: BEDROCK_MODEL,
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'ctx', cache_control: { type: 'ephemeral' } }] },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
            ],
          },
        ],
        max_completion_tokens: 300,
        temperature: 0.2,
        top_p: 0.8,
        top_k: 50,
        stop: 'END',
        tools: [WEATHER_TOOL],
        tool_choice: 'required',
        thinking: { type: 'enabled', budget_tokens: 1024 },
        guardrailConfig: { guardrailIdentifier: 'gr-1', guardrailVersion: '1' },
        anthropic_beta: ['token-efficient-tools-2025-02-19'],
      },
      { strictOpenAICompliance: false },
    );
    expect(body.system).toEqual([{ text: 'ctx' }, { cachePoint: { type: 'default' } }]);
    expect(body.messages[0].content[1]).toEqual({ image: { format: 'png', source: { bytes: PNG_BASE64 } } });
    expect(body.inferenceConfig).toEqual({ maxTokens: 300, temperature: 0.2, topP: 0.8, stopSequences: ['END'] });
    expect(body.toolConfig.toolChoice).toEqual({ any: {} });
    expect(body.guardrailConfig).toEqual({ guardrailIdentifier: 'gr-1', guardrailVersion: '1' });
    expect(body.additionalModelRequestFields).toEqual({
      top_k: 50,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      anthropic_beta: ['token-efficient-tools-2025-02-19'],
    });
    expect(
      req({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        tools: [WEATHER_TOOL],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      }).toolConfig.toolChoice,
    ).toEqual({ tool: { name: 'get_weather' } });
    expect(req({ model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL], tool_choice: 'none' })).not.toHaveProperty('toolConfig');
  });

  it('refuses image URLs Bedrock cannot fetch, and parameters it cannot take', () => {
    const problem = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        expect(err).toBeInstanceOf(ValidationError);
        return (err as ValidationError).problems[0]!.path;
      }
      throw new Error('expected a 400');
    };
    expect(problem(() => req({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a.png' } }] }] }))).toBe(
      'messages[0].content[0].image_url.url',
    );
    expect(problem(() => req({ model: 'm', messages: [{ role: 'user', content: 'x' }], seed: 1 }))).toBe('seed');
    expect(problem(() => req({ model: 'm', messages: [{ role: 'user', content: 'x' }], parallel_tool_calls: false }))).toBe('parallel_tool_calls');
    expect(problem(() => req(conversation('m'), {}, 'chatComplete') && req({ ...conversation('m'), tool_choice: 'none' }))).toBe('tool_choice');
  });

  it('serves json_schema through a forced tool and returns its input as content', () => {
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'object' } } },
    };
    expect(req(body).toolConfig).toEqual({
      tools: [{ toolSpec: { name: 'json_response', description: 'Returns the answer as p', inputSchema: { json: { type: 'object' } } } }],
      toolChoice: { tool: { name: 'json_response' } },
    });
    const out = res(
      { ...toolConverse(), output: { message: { role: 'assistant', content: [{ toolUse: { toolUseId: 't', name: 'json_response', input: { a: 1 } } }] } } },
      body,
    );
    expect(out.choices[0].message.content).toBe('{"a":1}');
    expect(out.choices[0].finish_reason).toBe('stop');
  });
});

describe('bedrock Converse response and stream', () => {
  it('maps text, tool calls, stop reasons and cache usage', () => {
    expect(res(textConverse()).choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: TEXT_ANSWER.text, refusal: null },
      logprobs: null,
      finish_reason: 'stop',
    });
    expect(res(textConverse()).usage).toEqual({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28, prompt_tokens_details: { cached_tokens: 0 } });
    const tools = res(toolConverse());
    expect(tools.choices[0].finish_reason).toBe('tool_calls');
    expect(tools.choices[0].message.tool_calls.map((c: any) => c.function)).toEqual([
      { name: 'get_weather', arguments: '{"city":"Rome"}' },
      { name: 'get_weather', arguments: '{"city":"Milan"}' },
    ]);
    expect(res({ ...textConverse(), stopReason: 'guardrail_intervened' }).choices[0].finish_reason).toBe('content_filter');
    expect(res({ ...textConverse(), stopReason: 'max_tokens' }).choices[0].finish_reason).toBe('length');
    const cached = res({
      ...textConverse(),
      usage: { inputTokens: 5, outputTokens: 8, totalTokens: 113, cacheReadInputTokens: 60, cacheWriteInputTokens: 40 },
    });
    expect(cached.usage).toEqual({ prompt_tokens: 105, completion_tokens: 8, total_tokens: 113, prompt_tokens_details: { cached_tokens: 60 } });
  });

  it('decodes event-stream frames split anywhere', () => {
    const decoder = new EventStreamDecoder();
    const events = pieces(textFrames(), 3).flatMap((p) => decoder.push(p));
    expect(events.map((e) => e.type)).toEqual([
      'messageStart',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockDelta',
      'contentBlockStop',
      'messageStop',
      'metadata',
    ]);
    expect(decoder.pending).toBe(0);
    const corrupt = Buffer.from(textFrames()[1]!);
    corrupt.writeUInt8(corrupt.readUInt8(corrupt.length - 6) ^ 0xff, corrupt.length - 6);
    expect(() => new EventStreamDecoder().push(corrupt)).toThrow(/checksum/);
  });

  it.each([true, false])('streams text (include_usage %s) with the usage from the metadata event', (includeUsage) => {
    const body = { model: BEDROCK_MODEL, messages: [], stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) };
    const run = runStream(converseStream(ctxFor(body)), pieces(textFrames(), 11));
    checkStreamShape(run, includeUsage);
    const a = assemble(run.events);
    expect(a.content).toBe(TEXT_ANSWER.text);
    expect(a.finishReasons).toEqual(['stop']);
    expect(run.outcome.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
  });

  it('streams parallel tool calls', () => {
    const run = runStream(
      converseStream(ctxFor({ model: BEDROCK_MODEL, messages: [], stream: true, stream_options: { include_usage: true } })),
      pieces(toolFrames(), 13),
    );
    checkStreamShape(run, true);
    const a = assemble(run.events);
    expect(a.toolCalls).toEqual([
      { id: 'tooluse_s0', name: 'get_weather', arguments: '{"city":"Rome"}' },
      { id: 'tooluse_s1', name: 'get_weather', arguments: '{"city":"Milan"}' },
    ]);
    expect(a.finishReasons).toEqual(['tool_calls']);
  });

  it('streams reasoning content as content_blocks without strict compliance', () => {
    const frames = [
      event('messageStart', { role: 'assistant' }),
      event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'Thinking...' } } }),
      event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig' } } }),
      event('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'Done' } }),
      event('messageStop', { stopReason: 'end_turn' }),
      event('metadata', { usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } }),
    ];
    const run = runStream(converseStream(ctxFor({ model: 'm', messages: [], stream: true }, { strictOpenAICompliance: false })), frames);
    expect(assemble(run.events)).toMatchObject({ thinking: 'Thinking...', content: 'Done' });
  });

  it('turns an exception frame into an OpenAI error event', () => {
    const run = runStream(converseStream(ctxFor({ model: 'm', messages: [], stream: true })), [
      textFrames()[0]!,
      exception('throttlingException', 'Too many requests, please wait before trying again.'),
    ]);
    expect(run.events.at(-1)).toEqual({
      error: { message: 'Too many requests, please wait before trying again.', type: 'rate_limit_error', param: null, code: 'throttlingException' },
    });
    expect(run.done).toBe(true);
  });

  it('reports a corrupt frame instead of failing the response', () => {
    const bad = frame({ ':event-type': 'messageStart' }, {});
    bad.writeUInt32BE(0xdeadbeef, 8);
    const run = runStream(converseStream(ctxFor({ model: 'm', messages: [], stream: true })), [bad]);
    expect(run.outcome.error?.error.code).toBe('stream_decode_error');
  });

  it('maps errors with the type from x-amzn-errortype', () => {
    expect(
      bedrock.transformError(400, '{"message":"Malformed input request"}', {
        headers: { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
      }),
    ).toEqual({
      error: { message: 'Malformed input request', type: 'invalid_request_error', param: null, code: 'ValidationException' },
    });
    expect(bedrock.transformError(429, '{"message":"Too many tokens"}', { headers: { 'x-amzn-errortype': 'ThrottlingException' } }).error.type).toBe(
      'rate_limit_error',
    );
    expect(bedrock.transformError(503, '{"Message":"Service unavailable"}', {}).error).toMatchObject({ type: 'api_error', message: 'Service unavailable' });
  });
});

describe('bedrock embeddings, images and rerank', () => {
  it('Titan v2 takes one text; Cohere takes a batch with an input type', () => {
    expect(req({ model: 'amazon.titan-embed-text-v2:0', input: 'hello', dimensions: 256 }, {}, 'embed')).toEqual({ inputText: 'hello', dimensions: 256 });
    expect(() => req({ model: 'amazon.titan-embed-text-v2:0', input: ['a', 'b'] }, {}, 'embed')).toThrow(ValidationError);
    expect(req({ model: 'cohere.embed-english-v3', input: ['a', 'b'], input_type: 'search_query' }, {}, 'embed')).toEqual({
      texts: ['a', 'b'],
      input_type: 'search_query',
    });
    expect(req({ model: 'cohere.embed-english-v3', input: ['a'] }, {}, 'embed').input_type).toBe('search_document');
  });

  it('answers embeddings in OpenAI shape, floats or base64', () => {
    const titan = res({ embedding: [0.5, -1], inputTextTokenCount: 4 }, { model: 'amazon.titan-embed-text-v2:0', input: 'x' }, 'embed');
    expect(titan).toEqual({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: [0.5, -1] }],
      model: 'amazon.titan-embed-text-v2:0',
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    const b64 = res({ embeddings: [[0.5, -1]] }, { model: 'cohere.embed-english-v3', input: ['x'], encoding_format: 'base64' }, 'embed', {
      'x-amzn-bedrock-input-token-count': '3',
    });
    const bytes = Buffer.from(b64.data[0].embedding, 'base64');
    const decoded = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    expect([...decoded]).toEqual([0.5, -1]);
    expect(b64.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
  });

  it('maps image generation for Titan and Stability (documented subset)', () => {
    expect(req({ model: 'amazon.titan-image-generator-v2:0', prompt: 'a cat', n: 2, size: '1024x512', quality: 'hd' }, {}, 'imageGenerate')).toEqual({
      taskType: 'TEXT_IMAGE',
      textToImageParams: { text: 'a cat' },
      imageGenerationConfig: { numberOfImages: 2, quality: 'premium', width: 1024, height: 512 },
    });
    expect(req({ model: 'stability.sd3-5-large-v1:0', prompt: 'a cat', size: '1792x1024' }, {}, 'imageGenerate')).toEqual({
      prompt: 'a cat',
      output_format: 'png',
      aspect_ratio: '16:9',
    });
    expect(() => req({ model: 'stability.sd3-5-large-v1:0', prompt: 'a cat', response_format: 'url' }, {}, 'imageGenerate')).toThrow(/b64_json/);
    expect(res({ images: ['QUJD'] }, { model: 'stability.sd3-5-large-v1:0', prompt: 'x' }, 'imageGenerate')).toEqual({
      created: Math.floor(T0 / 1000),
      data: [{ b64_json: 'QUJD' }],
    });
  });

  it('builds the Rerank request with the model ARN and answers rerank results in the shape of the contract', () => {
    const body = {
      model: 'amazon.rerank-v1:0',
      query: 'capital of France',
      documents: ['Berlin is in Germany', { text: 'Paris is the capital of France' }],
      top_n: 2,
      return_documents: true,
    };
    const sent = req(body, { options: { aws_region: 'us-west-2' } }, 'rerank');
    expect(sent).toEqual({
      queries: [{ type: 'TEXT', textQuery: { text: 'capital of France' } }],
      sources: [
        { type: 'INLINE', inlineDocumentSource: { type: 'TEXT', textDocument: { text: 'Berlin is in Germany' } } },
        { type: 'INLINE', inlineDocumentSource: { type: 'TEXT', textDocument: { text: 'Paris is the capital of France' } } },
      ],
      rerankingConfiguration: {
        type: 'BEDROCK_RERANKING_MODEL',
        bedrockRerankingConfiguration: {
          numberOfResults: 2,
          modelConfiguration: { modelArn: 'arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0' },
        },
      },
    });
    const arn = 'arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0';
    expect(req({ ...body, model: arn }, {}, 'rerank').rerankingConfiguration.bedrockRerankingConfiguration.modelConfiguration.modelArn).toBe(arn);
    expect(
      res(
        {
          results: [
            { index: 0, relevanceScore: 0.1 },
            { index: 1, relevanceScore: 0.9 },
          ],
        },
        body,
        'rerank',
      ),
    ).toEqual({
      object: 'list',
      id: 'req-1',
      model: 'amazon.rerank-v1:0',
      provider: 'bedrock',
      results: [
        { index: 1, relevance_score: 0.9, document: { text: 'Paris is the capital of France' } },
        { index: 0, relevance_score: 0.1, document: { text: 'Berlin is in Germany' } },
      ],
      usage: { search_units: 1 },
    });
  });
});

describe('bedrock URLs and signing', () => {
  it('puts inference profiles and ARNs URL-encoded in the path, in the region of the options', async () => {
    const url = async (model: string, stream = false) =>
      (await buildNativeRequest(bedrock, 'chatComplete', ctxFor({ model, messages: [{ role: 'user', content: 'x' }], stream }, { options: KEYS }))).url.href;
    expect(await url('us.anthropic.claude-3-7-sonnet-20250219-v1:0')).toBe(
      'https://bedrock-runtime.us-west-2.amazonaws.com/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse',
    );
    expect(await url('arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/a1b2c3', true)).toBe(
      'https://bedrock-runtime.us-west-2.amazonaws.com/model/arn%3Aaws%3Abedrock%3Aus-west-2%3A123456789012%3Aapplication-inference-profile%2Fa1b2c3/converse-stream',
    );
    const rerank = await buildNativeRequest(bedrock, 'rerank', ctxFor({ model: 'amazon.rerank-v1:0', query: 'q', documents: ['a'] }, { options: KEYS }));
    expect(rerank.url.href).toBe('https://bedrock-agent-runtime.us-west-2.amazonaws.com/rerank');
  });

  it('refuses a region that is not one, and requests without any credentials', async () => {
    await expect(
      buildNativeRequest(bedrock, 'chatComplete', ctxFor({ model: 'm', messages: [] }, { options: { ...KEYS, aws_region: 'evil.example.com/#' } })),
    ).rejects.toMatchObject({
      problems: [{ path: 'aws_region' }],
    });
    await expect(buildNativeRequest(bedrock, 'chatComplete', ctxFor({ model: 'm', messages: [] }, { apiKey: undefined }))).rejects.toMatchObject({
      problems: [{ path: 'aws_access_key_id' }],
    });
  });

  it('signs with the session token and a SigV4 signature AWS would accept', async () => {
    const r = await buildNativeRequest(
      bedrock,
      'chatComplete',
      ctxFor(
        { model: BEDROCK_MODEL, messages: [{ role: 'user', content: 'x' }] },
        { options: { ...KEYS, aws_access_key_id: 'ASIATEMP', aws_secret_access_key: 'temp-secret', aws_session_token: 'FwoGZXIvYXdzE' } },
      ),
    );
    expect(r.headers['x-amz-security-token']).toBe('FwoGZXIvYXdzE');
    expect(r.headers['x-amz-date']).toBe('20260115T120000Z');
    const check = verifySigV4({
      method: r.method,
      path: r.url.pathname + r.url.search,
      headers: Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k.toLowerCase(), v])),
      body: String(r.body),
      json: undefined,
    });
    expect(check).toEqual({ ok: true, accessKeyId: 'ASIATEMP', region: 'us-west-2', service: 'bedrock' });
  });

  it('uses a Bedrock API key as a bearer token when no AWS credentials are given', async () => {
    const r = await buildNativeRequest(bedrock, 'chatComplete', ctxFor({ model: BEDROCK_MODEL, messages: [] }, { apiKey: 'ABSKbedrockapikey' }));
    expect(r.headers.authorization).toBe('Bearer ABSKbedrockapikey');
  });
});

describe('bedrock over HTTP', () => {
  let mock: MockBedrock;
  const up = localUpstream();
  beforeAll(async () => {
    mock = await startMockBedrock();
  });
  afterAll(async () => {
    up.close();
    await mock.close();
  });
  beforeEach(() => clearAwsCredentialCache());

  const call = (
    endpoint: 'chatComplete' | 'embed' | 'rerank' | 'imageGenerate',
    body: Record<string, unknown>,
    over: Parameters<typeof ctxFor>[1] = {},
    onOutcome?: (o: NativeOutcome) => void,
  ) => callNative({ provider: bedrock, endpoint, ctx: ctxFor(body, { options: KEYS, ...over }), send: up.send, baseUrl: mock.url, onOutcome });

  it('Converse: signed request accepted, OpenAI answer with tool calls', async () => {
    const answer = await call('chatComplete', conversation(BEDROCK_MODEL));
    expect(mock.checks.at(-1)).toMatchObject({ ok: true, region: 'us-west-2', service: 'bedrock' });
    expect(mock.received.at(-1)!.path).toBe('/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse');
    const json = JSON.parse(await readText(answer));
    expect(json.choices[0].message.tool_calls).toHaveLength(2);
  });

  it('ConverseStream: event-stream in, OpenAI SSE out, usage reported', async () => {
    let outcome: NativeOutcome | undefined;
    const answer = await call(
      'chatComplete',
      { model: BEDROCK_MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } },
      {},
      (o) => (outcome = o),
    );
    expect(mock.received.at(-1)!.path).toMatch(/\/converse-stream$/);
    const { events, done } = parseSse(await readText(answer));
    expect(done).toBe(true);
    const a = assemble(events);
    expect(a.content).toBe(TEXT_ANSWER.text);
    expect(a.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
    expect(outcome?.usage).toMatchObject({ prompt_tokens: 20 });
  });

  it('a wrong secret is refused by the (mock) service with its error mapped', async () => {
    const answer = await call(
      'chatComplete',
      { model: BEDROCK_MODEL, messages: [{ role: 'user', content: 'hi' }] },
      { options: { ...KEYS, aws_secret_access_key: 'wrong' } },
    );
    expect(answer.status).toBe(403);
    expect(JSON.parse(await readText(answer)).error).toMatchObject({ type: 'permission_error', code: 'InvalidSignatureException' });
  });

  it('assumes aws_role_arn through STS (signed for sts) and caches the credentials until shortly before expiry', async () => {
    const clock = new ManualClock(T0);
    const options = { ...KEYS, aws_role_arn: 'arn:aws:iam::123456789012:role/demo', aws_external_id: 'ext-1' };
    const authEndpoints = { sts: `${mock.url}/` };
    const chat = () => call('chatComplete', { model: BEDROCK_MODEL, messages: [{ role: 'user', content: 'hi' }] }, { options, clock, authEndpoints });
    const before = mock.received.length;
    await readText(await chat());
    await readText(await chat());
    const sent = mock.received.slice(before);
    expect(sent.map((r) => (r.path === '/' ? 'sts' : 'bedrock'))).toEqual(['sts', 'bedrock', 'bedrock']);
    expect(new URLSearchParams(sent[0]!.body).get('RoleArn')).toBe('arn:aws:iam::123456789012:role/demo');
    expect(new URLSearchParams(sent[0]!.body).get('ExternalId')).toBe('ext-1');
    expect(verifySigV4(sent[1]!)).toMatchObject({ ok: true, accessKeyId: 'ASIAROLE' });
    expect(sent[1]!.headers['x-amz-security-token']).toBe('role-session-token');
    // The credentials expire at 13:00; from 12:55 they are fetched again.
    clock.set(Date.UTC(2026, 0, 15, 12, 56));
    await readText(await chat());
    expect(mock.received.slice(before).filter((r) => r.path === '/')).toHaveLength(2);
  });

  it('uses an injected fetchCredentials (e.g. the runtime role) instead of STS keys', async () => {
    const seen: AssumeRoleInput[] = [];
    const fetchCredentials = async (input: AssumeRoleInput) => {
      seen.push(input);
      return { accessKeyId: 'ASIATEMP', secretAccessKey: 'temp-secret', sessionToken: 'tok', expiresAt: T0 + 3_600_000 };
    };
    const answer = await call(
      'chatComplete',
      { model: BEDROCK_MODEL, messages: [{ role: 'user', content: 'hi' }] },
      { options: { aws_region: 'eu-west-1', aws_role_arn: 'arn:aws:iam::123456789012:role/x' }, fetchCredentials },
    );
    expect(answer.status).toBe(200);
    expect(seen).toEqual([{ roleArn: 'arn:aws:iam::123456789012:role/x', region: 'eu-west-1', sessionName: 'gantry' }]);
    expect(mock.checks.at(-1)).toMatchObject({ ok: true, accessKeyId: 'ASIATEMP', region: 'eu-west-1' });
  });

  it('embeddings, images and rerank go through signed InvokeModel / Rerank calls', async () => {
    const emb = JSON.parse(await readText(await call('embed', { model: 'cohere.embed-multilingual-v3', input: ['a', 'b'] })));
    expect(emb.data.map((d: any) => d.embedding)).toEqual([
      [0, 0.5],
      [1, 0.5],
    ]);
    expect(emb.usage.prompt_tokens).toBe(9);
    const img = JSON.parse(await readText(await call('imageGenerate', { model: 'amazon.nova-canvas-v1:0', prompt: 'a cat', n: 2 })));
    expect(img.data).toEqual([{ b64_json: 'aW1n0' }, { b64_json: 'aW1n1' }]);
    const rr = JSON.parse(await readText(await call('rerank', { model: 'amazon.rerank-v1:0', query: 'q', documents: ['a', 'b'] })));
    expect(rr.results.map((r: any) => r.index)).toEqual([1, 0]);
    expect(mock.received.at(-1)!.path).toBe('/rerank');
    expect(mock.checks.slice(-3).every((c) => c.ok)).toBe(true);
  });
});
