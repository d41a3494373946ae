import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callNative, type NativeOutcome } from '../../../../../layers/core/src/providers/native/call.ts';
import { cohere, cohereStream } from '../../../../../layers/core/src/providers/native/cohere.ts';
import { COHERE_KEY, COHERE_MODEL, startMockCohere, textChat, textEvents, toolChat, toolEvents } from '../../../../support/mock-cohere.ts';
import type { MockServer } from '../../../../support/mock-http.ts';
import { assemble, checkStreamShape, ctxFor, localUpstream, parseSse, pieces, readText, runStream } from '../../../../support/native-harness.ts';
import { conversation, PNG_BASE64, TEXT_ANSWER, WEATHER_TOOL } from '../../../../support/native-fixtures.ts';

type Endpoint = 'chatComplete' | 'embed' | 'rerank';
const req = (body: Record<string, unknown>, over: Parameters<typeof ctxFor>[1] = {}, endpoint: Endpoint = 'chatComplete') =>
  cohere.transformRequest!(endpoint, body, ctxFor(body, over)) as Record<string, any>;
const res = (
  json: unknown,
  body: Record<string, unknown> = { model: COHERE_MODEL, messages: [] },
  endpoint: Endpoint = 'chatComplete',
  over: Parameters<typeof ctxFor>[1] = {},
) => cohere.transformResponse!(endpoint, json, ctxFor(body, over), {}) as Record<string, any>;

describe('cohere chat', () => {
  it('maps the conversation, tool calls and results, and tools', () => {
    expect(req(conversation(COHERE_MODEL))).toEqual({
      model: COHERE_MODEL,
      messages: [
        { role: 'system', content: 'You are a weather bot.' },
        { role: 'user', content: 'What is the weather in Paris?' },
        { role: 'assistant', tool_calls: [{ id: 'call_paris', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_paris', content: '{"temp_c":18}' },
        { role: 'assistant', content: 'It is 18°C in Paris.' },
        { role: 'user', content: 'And in Rome and Milan?' },
      ],
      tools: [WEATHER_TOOL],
    });
  });

  it('maps sampling, JSON mode, tool_choice and images', () => {
    const body = req({
      model: COHERE_MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
          ],
        },
      ],
      max_tokens: 10,
      stop: ['END'],
      temperature: 0.3,
      top_p: 0.5,
      top_k: 5,
      seed: 1,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
      tools: [WEATHER_TOOL, { type: 'function', function: { name: 'other', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      safety_mode: 'STRICT',
    });
    expect(body).toMatchObject({
      max_tokens: 10,
      stop_sequences: ['END'],
      temperature: 0.3,
      p: 0.5,
      k: 5,
      seed: 1,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      safety_mode: 'STRICT',
    });
    expect(body.response_format).toEqual({ type: 'json_object', json_schema: { type: 'object' } });
    expect(body.tool_choice).toBe('REQUIRED');
    expect(body.tools.map((t: any) => t.function.name)).toEqual(['get_weather']);
    expect(body.messages[0].content[1]).toEqual({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } });
    expect(req({ model: 'c', messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL], tool_choice: 'none' }).tool_choice).toBe('NONE');
    expect(() => req({ model: 'c', messages: [{ role: 'user', content: 'x' }], logprobs: true })).toThrow(/logprobs: is not supported by cohere/);
  });

  it('maps answers, tool calls and usage (actual tokens before billed units)', () => {
    const text = res(textChat());
    expect(text.choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: TEXT_ANSWER.text, refusal: null },
      logprobs: null,
      finish_reason: 'stop',
    });
    expect(text.usage).toEqual({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
    const tools = res(toolChat());
    expect(tools.choices[0].finish_reason).toBe('tool_calls');
    expect(tools.choices[0].message.tool_calls[1]).toEqual({
      id: 'get_weather_1byjy32y4hvq',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Milan"}' },
    });
    expect(res(toolChat(), undefined, 'chatComplete', { strictOpenAICompliance: false }).choices[0].message.content_blocks).toEqual([
      { type: 'thinking', thinking: 'I will look up the weather in Rome and Milan.' },
    ]);
    expect(res({ ...textChat(), finish_reason: 'MAX_TOKENS' }).choices[0].finish_reason).toBe('length');
  });

  it.each([true, false])('streams text (include_usage %s)', (includeUsage) => {
    const run = runStream(
      cohereStream(ctxFor({ model: COHERE_MODEL, messages: [], stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) })),
      pieces(textEvents(), 10),
    );
    checkStreamShape(run, includeUsage);
    expect(assemble(run.events)).toMatchObject({ content: TEXT_ANSWER.text, finishReasons: ['stop'] });
    expect(run.outcome.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8 });
  });

  it('streams parallel tool calls', () => {
    const run = runStream(
      cohereStream(ctxFor({ model: COHERE_MODEL, messages: [], stream: true, stream_options: { include_usage: true } })),
      pieces(toolEvents(), 10),
    );
    checkStreamShape(run, true);
    const a = assemble(run.events);
    expect(a.toolCalls).toEqual([
      { id: 'get_weather_s0', name: 'get_weather', arguments: '{"city":"Rome"}' },
      { id: 'get_weather_s1', name: 'get_weather', arguments: '{"city":"Milan"}' },
    ]);
    expect(a.finishReasons).toEqual(['tool_calls']);
  });

  it('maps errors', () => {
    expect(cohere.transformError(429, '{"id":"x","message":"You are using a Trial key, which is limited to 10 API calls / minute."}', {})).toEqual({
      error: { message: 'You are using a Trial key, which is limited to 10 API calls / minute.', type: 'rate_limit_error', param: null, code: null },
    });
    expect(cohere.transformError(500, 'upstream connect error', {}).error.type).toBe('api_error');
  });
});

describe('cohere embed and rerank', () => {
  it('embeds with an input type (search_document by default)', () => {
    expect(req({ model: 'embed-v4.0', input: ['a'], input_type: 'search_query', dimensions: 512 }, {}, 'embed')).toEqual({
      model: 'embed-v4.0',
      texts: ['a'],
      input_type: 'search_query',
      embedding_types: ['float'],
      output_dimension: 512,
    });
    expect(req({ model: 'embed-english-v3.0', input: 'a' }, {}, 'embed').input_type).toBe('search_document');
  });

  it('reranks with top_n and documents as text; strips a cohere. model prefix; adds documents when asked', () => {
    const body = { model: 'cohere.rerank-v3.5', query: 'q', documents: ['x', { text: 'y' }], top_n: 1, return_documents: true };
    expect(req(body, {}, 'rerank')).toEqual({ model: 'rerank-v3.5', query: 'q', documents: ['x', 'y'], top_n: 1 });
    expect(res({ id: 'r', results: [{ index: 1, relevance_score: 0.9 }], meta: { billed_units: { search_units: 1 } } }, body, 'rerank')).toEqual({
      object: 'list',
      id: 'r',
      model: 'rerank-v3.5',
      provider: 'cohere',
      results: [{ index: 1, relevance_score: 0.9, document: { text: 'y' } }],
      usage: { search_units: 1 },
    });
  });
});

describe('cohere over HTTP', () => {
  let mock: MockServer;
  const up = localUpstream();
  beforeAll(async () => {
    mock = await startMockCohere();
  });
  afterAll(async () => {
    up.close();
    await mock.close();
  });
  const call = (endpoint: Endpoint, body: Record<string, unknown>, over: Parameters<typeof ctxFor>[1] = {}, onOutcome?: (o: NativeOutcome) => void) =>
    callNative({ provider: cohere, endpoint, ctx: ctxFor(body, { apiKey: COHERE_KEY, ...over }), send: up.send, baseUrl: mock.url, onOutcome });

  it('chat, stream, embed and rerank with the bearer key', async () => {
    const chat = JSON.parse(await readText(await call('chatComplete', conversation(COHERE_MODEL))));
    expect(mock.received.at(-1)!.path).toBe('/v2/chat');
    expect(mock.received.at(-1)!.headers.authorization).toBe(`Bearer ${COHERE_KEY}`);
    expect(chat.choices[0].message.tool_calls).toHaveLength(2);

    let outcome: NativeOutcome | undefined;
    const streamed = parseSse(
      await readText(await call('chatComplete', { model: COHERE_MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true }, {}, (o) => (outcome = o))),
    );
    expect(assemble(streamed.events).content).toBe(TEXT_ANSWER.text);
    expect(outcome?.usage).toMatchObject({ prompt_tokens: 20 });

    const emb = JSON.parse(await readText(await call('embed', { model: 'embed-v4.0', input: ['a', 'b'] })));
    expect(emb).toMatchObject({ object: 'list', data: [{ embedding: [0, 0.1] }, { embedding: [1, 0.1] }], usage: { prompt_tokens: 6 } });

    const rr = JSON.parse(await readText(await call('rerank', { model: 'rerank-v3.5', query: 'q', documents: ['a', 'b'] })));
    expect(rr.results).toEqual([
      { index: 1, relevance_score: 0.98 },
      { index: 0, relevance_score: 0.05 },
    ]);
  });

  it('a rejected key keeps the 401', async () => {
    const answer = await call('chatComplete', { model: COHERE_MODEL, messages: [{ role: 'user', content: 'hi' }] }, { apiKey: 'bad' });
    expect(answer.status).toBe(401);
    expect(JSON.parse(await readText(answer)).error).toMatchObject({ type: 'authentication_error', message: 'invalid api token' });
  });
});
