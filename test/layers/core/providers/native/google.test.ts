import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { buildNativeRequest, callNative, type NativeOutcome } from '../../../../../layers/core/src/providers/native/call.ts';
import { clearGoogleTokenCache } from '../../../../../layers/core/src/providers/native/google-auth.ts';
import { geminiSchema, geminiStream, google, vertexAI } from '../../../../../layers/core/src/providers/native/google.ts';
import { ANTHROPIC_MODEL } from '../../../../support/mock-anthropic.ts';
import {
  blockedCandidate,
  blockedPrompt,
  GEMINI_MODEL,
  googleErrorReply,
  startMockGoogle,
  STUDIO_KEY,
  testServiceAccount,
  textChunks,
  textResponse,
  toolChunks,
  toolResponse,
  type MockGoogle,
} from '../../../../support/mock-google.ts';
import { assemble, checkStreamShape, ctxFor, localUpstream, parseSse, pieces, readText, runStream, T0 } from '../../../../support/native-harness.ts';
import { conversation, PNG_BASE64, TEXT_ANSWER, WEATHER_TOOL } from '../../../../support/native-fixtures.ts';

const req = (body: Record<string, unknown>, over: Parameters<typeof ctxFor>[1] = {}) =>
  google.transformRequest!('chatComplete', body, ctxFor(body, over)) as Record<string, any>;
const res = (json: unknown, body: Record<string, unknown> = { model: GEMINI_MODEL, messages: [] }, over: Parameters<typeof ctxFor>[1] = {}) =>
  google.transformResponse!('chatComplete', json, ctxFor(body, over), {}) as Record<string, any>;

describe('gemini request', () => {
  it('maps system instructions, turns, function calls and responses, and tools', () => {
    expect(req(conversation(GEMINI_MODEL))).toEqual({
      contents: [
        { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp_c: 18 } } }] },
        { role: 'model', parts: [{ text: 'It is 18°C in Paris.' }] },
        { role: 'user', parts: [{ text: 'And in Rome and Milan?' }] },
      ],
      systemInstruction: { parts: [{ text: 'You are a weather bot.' }] },
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Current weather for a city', parameters: WEATHER_TOOL.function.parameters }] }],
    });
  });

  it('maps generation settings, tool_choice and images', () => {
    const body = req({
      model: GEMINI_MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'describe' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/photo.webp' } },
          ],
        },
      ],
      max_tokens: 50,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 20,
      stop: ['x'],
      n: 2,
      seed: 3,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      logprobs: true,
      top_logprobs: 3,
      tools: [WEATHER_TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }],
    });
    expect(body.contents[0].parts).toEqual([
      { text: 'describe' },
      { inlineData: { mimeType: 'image/png', data: PNG_BASE64 } },
      { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/photo.webp' } },
    ]);
    expect(body.generationConfig).toEqual({
      maxOutputTokens: 50,
      temperature: 0.5,
      topP: 0.9,
      topK: 20,
      stopSequences: ['x'],
      candidateCount: 2,
      seed: 3,
      presencePenalty: 0.1,
      frequencyPenalty: 0.2,
      responseLogprobs: true,
      logprobs: 3,
    });
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } });
    expect(body.safetySettings).toEqual([{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }]);
    const base = { model: 'g', messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL] };
    expect(req({ ...base, tool_choice: 'none' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'NONE' } });
    expect(req({ ...base, tool_choice: 'required' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    expect(req({ ...base, tool_choice: 'auto' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(() => req({ ...base, parallel_tool_calls: false })).toThrow(/parallel_tool_calls: is not supported by google/);
  });

  it('asks for JSON with responseMimeType and a schema Gemini accepts', () => {
    expect(req({ model: 'g', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } }).generationConfig).toEqual({
      responseMimeType: 'application/json',
    });
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      additionalProperties: false,
      properties: { city: { type: ['string', 'null'] }, kind: { const: 'town' }, loc: { $ref: '#/$defs/Loc' } },
      required: ['city'],
      $defs: { Loc: { type: 'object', properties: { lat: { type: 'number' } }, additionalProperties: false } },
    };
    const config = req({
      model: 'g',
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'c', schema } },
    }).generationConfig;
    expect(config).toEqual({
      responseMimeType: 'application/json',
      responseSchema: {
        type: 'object',
        properties: { city: { type: 'string', nullable: true }, kind: { enum: ['town'] }, loc: { type: 'object', properties: { lat: { type: 'number' } } } },
        required: ['city'],
      },
    });
    expect(geminiSchema({ anyOf: [{ type: 'integer' }, { type: 'null' }] })).toEqual({ nullable: true, type: 'integer' });
  });

  it('maps thinking and reasoning_effort to a thinking budget; thoughts are included without strict compliance only', () => {
    const base = { model: 'g', messages: [{ role: 'user', content: 'x' }] };
    expect(req({ ...base, thinking: { type: 'enabled', budget_tokens: 512 } }, { strictOpenAICompliance: false }).generationConfig).toEqual({
      thinkingConfig: { thinkingBudget: 512, includeThoughts: true },
    });
    expect(req({ ...base, reasoning_effort: 'low' }).generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 1024 } });
    expect(() => req({ ...base, reasoning_effort: 'extreme' })).toThrow(/reasoning_effort/);
  });

  it('carries a thought signature in the tool call id and sends it back with the call', () => {
    const json = {
      ...toolResponse(),
      candidates: [
        {
          content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Rome' } }, thoughtSignature: 'CiQBVKhc7sig' }] },
          finishReason: 'STOP',
          index: 0,
        },
      ],
    };
    const call = res(json).choices[0].message.tool_calls[0];
    expect(call.id).toMatch(/__thought__CiQBVKhc7sig$/);
    const next = req({
      model: 'g',
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
    });
    expect(next.contents[1].parts[0]).toEqual({ functionCall: { name: 'get_weather', args: { city: 'Rome' } }, thoughtSignature: 'CiQBVKhc7sig' });
    expect(next.contents[2].parts[0]).toEqual({ functionResponse: { name: 'get_weather', response: { content: 'sunny' } } });
  });
});

describe('gemini response and stream', () => {
  it('maps text with usage, and tool calls with ids', () => {
    const out = res(textResponse());
    expect(out).toMatchObject({ id: 'mT9uaPuHKr6f1dkP3dCm8Qg', model: GEMINI_MODEL, usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 } });
    expect(out.choices[0].message.content).toBe(TEXT_ANSWER.text);
    const tools = res(toolResponse());
    expect(tools.choices[0].finish_reason).toBe('tool_calls');
    expect(tools.choices[0].message.tool_calls.map((c: any) => [c.id.startsWith('call_'), c.function.name, c.function.arguments])).toEqual([
      [true, 'get_weather', '{"city":"Rome"}'],
      [true, 'get_weather', '{"city":"Milan"}'],
    ]);
  });

  it('maps safety blocks (prompt or answer) to finish_reason content_filter', () => {
    expect(res(blockedPrompt()).choices).toEqual([
      { index: 0, message: { role: 'assistant', content: null, refusal: null }, logprobs: null, finish_reason: 'content_filter' },
    ]);
    expect(res(blockedCandidate()).choices[0].finish_reason).toBe('content_filter');
    expect(res({ ...textResponse(), candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'MAX_TOKENS' }] }).choices[0].finish_reason).toBe(
      'length',
    );
  });

  it('counts thoughts as reasoning tokens and cached content as cached tokens', () => {
    const json = {
      candidates: [{ content: { parts: [{ text: 'Considering...', thought: true }, { text: 'Paris.' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 5, thoughtsTokenCount: 40, cachedContentTokenCount: 60, totalTokenCount: 145 },
    };
    expect(res(json).usage).toEqual({
      prompt_tokens: 100,
      completion_tokens: 45,
      total_tokens: 145,
      prompt_tokens_details: { cached_tokens: 60 },
      completion_tokens_details: { reasoning_tokens: 40 },
    });
    expect(res(json).choices[0].message.content_blocks).toBeUndefined();
    expect(res(json, undefined, { strictOpenAICompliance: false }).choices[0].message.content_blocks).toEqual([
      { type: 'thinking', thinking: 'Considering...' },
      { type: 'text', text: 'Paris.' },
    ]);
  });

  it('returns one choice per candidate', () => {
    const json = {
      candidates: [0, 1].map((index) => ({ content: { parts: [{ text: `answer ${index}` }] }, finishReason: 'STOP', index })),
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 2 },
    };
    expect(res(json).choices.map((c: any) => [c.index, c.message.content])).toEqual([
      [0, 'answer 0'],
      [1, 'answer 1'],
    ]);
  });

  it.each([true, false])('streams text (include_usage %s)', (includeUsage) => {
    const body = { model: GEMINI_MODEL, messages: [], stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) };
    const run = runStream(geminiStream(ctxFor(body)), pieces(textChunks(), 9));
    checkStreamShape(run, includeUsage);
    const a = assemble(run.events);
    expect(a.content).toBe(TEXT_ANSWER.text);
    expect(a.finishReasons).toEqual(['stop']);
    expect(run.outcome.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
  });

  it('streams function calls complete, and a blocked prompt as content_filter', () => {
    const tools = runStream(geminiStream(ctxFor({ model: 'g', messages: [], stream: true, stream_options: { include_usage: true } })), pieces(toolChunks()));
    checkStreamShape(tools, true);
    expect(assemble(tools.events).toolCalls.map((c) => [c.name, c.arguments])).toEqual([
      ['get_weather', '{"city":"Rome"}'],
      ['get_weather', '{"city":"Milan"}'],
    ]);
    expect(assemble(tools.events).finishReasons).toEqual(['tool_calls']);
    const blocked = runStream(geminiStream(ctxFor({ model: 'g', messages: [], stream: true })), pieces(`data: ${JSON.stringify(blockedPrompt())}\r\n\r\n`));
    expect(assemble(blocked.events).finishReasons).toEqual(['content_filter']);
    expect(blocked.outcome.usage).toMatchObject({ prompt_tokens: 8 });
  });

  it('maps errors, also when wrapped in an array', () => {
    const reply = googleErrorReply(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).');
    expect(google.transformError(429, JSON.stringify(reply.json), {})).toEqual({
      error: { message: 'Resource has been exhausted (e.g. check quota).', type: 'rate_limit_error', param: null, code: 'RESOURCE_EXHAUSTED' },
    });
    expect(google.transformError(400, JSON.stringify([{ error: { code: 400, message: 'bad', status: 'INVALID_ARGUMENT' } }]), {}).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'INVALID_ARGUMENT',
    });
  });

  it('embeds through batchEmbedContents (AI Studio) and predict (Vertex)', () => {
    const body = { model: 'text-embedding-004', input: ['a', 'b'], dimensions: 256, task_type: 'RETRIEVAL_DOCUMENT' };
    expect(google.transformRequest!('embed', body, ctxFor(body))).toEqual({
      requests: ['a', 'b'].map((text) => ({
        model: 'models/text-embedding-004',
        content: { parts: [{ text }] },
        taskType: 'RETRIEVAL_DOCUMENT',
        outputDimensionality: 256,
      })),
    });
    expect(vertexAI.transformRequest!('embed', body, ctxFor(body))).toEqual({
      instances: [
        { content: 'a', task_type: 'RETRIEVAL_DOCUMENT' },
        { content: 'b', task_type: 'RETRIEVAL_DOCUMENT' },
      ],
      parameters: { outputDimensionality: 256 },
    });
    const out = vertexAI.transformResponse!(
      'embed',
      { predictions: [{ embeddings: { values: [1, 2], statistics: { token_count: 4 } } }] },
      ctxFor(body),
      {},
    ) as any;
    expect(out).toEqual({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: [1, 2] }],
      model: 'text-embedding-004',
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
  });
});

describe('vertex URLs and Claude on Vertex', () => {
  const options = { vertex_project_id: 'my-project', vertex_region: 'europe-west4' };
  const url = async (model: string, stream = false, opts: Record<string, unknown> = options) =>
    (
      await buildNativeRequest(
        vertexAI,
        'chatComplete',
        ctxFor({ model, messages: [{ role: 'user', content: 'x' }], stream }, { options: opts, apiKey: 'ya29.token' }),
      )
    ).url.href;

  it('builds regional, global and per-family URLs', async () => {
    expect(await url(GEMINI_MODEL)).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent',
    );
    expect(await url(GEMINI_MODEL, true)).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse',
    );
    expect(await url('claude-sonnet-4@20250514', true, { ...options, vertex_region: 'global' })).toBe(
      'https://aiplatform.googleapis.com/v1/projects/my-project/locations/global/publishers/anthropic/models/claude-sonnet-4%4020250514:streamRawPredict',
    );
    expect(await url('meta/llama-3.3-70b-instruct-maas')).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/my-project/locations/europe-west4/endpoints/openapi/chat/completions',
    );
  });

  it('takes the project from the service account key and refuses malformed options', async () => {
    const { json } = testServiceAccount();
    const ctx = ctxFor({ model: GEMINI_MODEL, messages: [] }, { options: { vertex_service_account_json: JSON.stringify(json) } });
    expect(vertexAI.baseUrl(ctx)).toBe('https://us-central1-aiplatform.googleapis.com/v1/projects/gantry-test-project/locations/us-central1');
    expect(() => vertexAI.baseUrl(ctxFor({ model: 'g', messages: [] }, { options: { vertex_project_id: 'x.evil.com/#' } }))).toThrow(/vertex_project_id/);
    expect(() => vertexAI.baseUrl(ctxFor({ model: 'g', messages: [] }, { options: { vertex_project_id: 'my-project', vertex_region: 'a/../b' } }))).toThrow(
      /vertex_region/,
    );
    expect(() => vertexAI.baseUrl(ctxFor({ model: 'g', messages: [] }))).toThrow(/vertex_project_id: is required/);
  });

  it('sends Claude the Anthropic body with the Vertex anthropic_version and no model', () => {
    const body = { model: 'claude-sonnet-4@20250514', messages: [{ role: 'user', content: 'hi' }], stream: true };
    const sent = vertexAI.transformRequest!('chatComplete', body, ctxFor(body)) as Record<string, unknown>;
    expect(sent).toEqual({
      anthropic_version: 'vertex-2023-10-16',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      max_tokens: 4096,
      stream: true,
    });
  });
});

describe('google over HTTP', () => {
  const account = testServiceAccount();
  let mock: MockGoogle;
  const up = localUpstream();
  beforeAll(async () => {
    mock = await startMockGoogle(account);
  });
  afterAll(async () => {
    up.close();
    await mock.close();
  });
  beforeEach(() => clearGoogleTokenCache());

  it('AI Studio: x-goog-api-key, generateContent and SSE streams', async () => {
    const ctx = ctxFor(conversation(GEMINI_MODEL), { apiKey: STUDIO_KEY });
    const answer = await callNative({ provider: google, endpoint: 'chatComplete', ctx, send: up.send, baseUrl: `${mock.url}/v1beta` });
    expect(mock.received.at(-1)!.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(mock.received.at(-1)!.headers['x-goog-api-key']).toBe(STUDIO_KEY);
    expect(mock.received.at(-1)!.headers.authorization).toBeUndefined();
    expect(JSON.parse(await readText(answer)).choices[0].message.tool_calls).toHaveLength(2);

    let outcome: NativeOutcome | undefined;
    const streamed = await callNative({
      provider: google,
      endpoint: 'chatComplete',
      ctx: ctxFor({ model: GEMINI_MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true }, { apiKey: STUDIO_KEY }),
      send: up.send,
      baseUrl: `${mock.url}/v1beta`,
      onOutcome: (o) => (outcome = o),
    });
    expect(mock.received.at(-1)!.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const { events } = parseSse(await readText(streamed));
    expect(assemble(events).content).toBe(TEXT_ANSWER.text);
    expect(outcome?.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8 });
  });

  it('AI Studio: a bad key comes back as the provider error', async () => {
    const answer = await callNative({
      provider: google,
      endpoint: 'chatComplete',
      ctx: ctxFor({ model: GEMINI_MODEL, messages: [{ role: 'user', content: 'hi' }] }, { apiKey: 'wrong' }),
      send: up.send,
      baseUrl: `${mock.url}/v1beta`,
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(await readText(answer)).error).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'API key not valid. Please pass a valid API key.' });
  });

  it('Vertex: mints a token from the service account key, caches it, renews it before it expires', async () => {
    const clock = new ManualClock(T0);
    const base = `${mock.url}/v1/projects/gantry-test-project/locations/us-central1`;
    const chat = (model: string) =>
      callNative({
        provider: vertexAI,
        endpoint: 'chatComplete',
        ctx: ctxFor(
          { model, messages: [{ role: 'user', content: 'hi' }] },
          { apiKey: undefined, clock, options: { vertex_service_account_json: JSON.stringify(account.json) }, authEndpoints: { googleToken: mock.tokenUrl } },
        ),
        send: up.send,
        baseUrl: base,
      });
    expect((await chat(GEMINI_MODEL)).status).toBe(200);
    expect((await chat('claude-sonnet-4@20250514')).status).toBe(200);
    expect(mock.minted).toHaveLength(1);
    expect(mock.minted[0]).toEqual({
      header: { alg: 'RS256', typ: 'JWT', kid: 'a1b2c3d4e5' },
      claims: {
        iss: account.json.client_email,
        sub: account.json.client_email,
        aud: mock.tokenUrl,
        scope: 'https://www.googleapis.com/auth/cloud-platform',
        iat: T0 / 1000,
        exp: T0 / 1000 + 3600,
      },
    });
    expect(mock.received.at(-1)!.headers.authorization).toBe('Bearer ya29.minted-1');
    expect(mock.received.at(-1)!.path).toBe(
      '/v1/projects/gantry-test-project/locations/us-central1/publishers/anthropic/models/claude-sonnet-4%4020250514:rawPredict',
    );
    expect((mock.received.at(-1)!.json as Record<string, unknown>).anthropic_version).toBe('vertex-2023-10-16');
    clock.advance(55 * 60_000);
    await chat(GEMINI_MODEL);
    expect(mock.minted).toHaveLength(2);
    expect(mock.received.at(-1)!.headers.authorization).toBe('Bearer ya29.minted-2');
  });

  it('Vertex: a key Google rejects is a 401 naming the option; a caller token is used as it is', async () => {
    const other = testServiceAccount();
    const ctx = ctxFor(
      { model: GEMINI_MODEL, messages: [] },
      { options: { vertex_service_account_json: other.json }, authEndpoints: { googleToken: mock.tokenUrl } },
    );
    await expect(buildNativeRequest(vertexAI, 'chatComplete', ctx)).rejects.toMatchObject({ status: 401, param: 'vertex_service_account_json' });
    const direct = await buildNativeRequest(
      vertexAI,
      'chatComplete',
      ctxFor({ model: GEMINI_MODEL, messages: [] }, { apiKey: 'ya29.user-supplied', options: { vertex_project_id: 'p-1234' } }),
    );
    expect(direct.headers.authorization).toBe('Bearer ya29.user-supplied');
  });

  it('Vertex: Claude streams (streamRawPredict) become OpenAI chunks', async () => {
    let outcome: NativeOutcome | undefined;
    const answer = await callNative({
      provider: vertexAI,
      endpoint: 'chatComplete',
      ctx: ctxFor(
        { model: ANTHROPIC_MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } },
        { apiKey: 'ya29.user-supplied' },
      ),
      send: up.send,
      baseUrl: `${mock.url}/v1/projects/p/locations/us-east5`,
      onOutcome: (o) => (outcome = o),
    });
    expect(mock.received.at(-1)!.path).toMatch(/:streamRawPredict$/);
    const a = assemble(parseSse(await readText(answer)).events);
    expect(a.content).toBe(TEXT_ANSWER.text);
    expect(a.usage).toMatchObject({ prompt_tokens: 20 });
    expect(outcome?.finishReason).toBe('stop');
  });
});
