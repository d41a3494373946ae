import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../../layers/core/src/http/errors.ts';
import { anthropic, anthropicStream } from '../../../../../layers/core/src/providers/native/anthropic.ts';
import { callNative, type NativeOutcome } from '../../../../../layers/core/src/providers/native/call.ts';
import {
  ANTHROPIC_MODEL,
  anthropicErrorReply,
  startMockAnthropic,
  textMessage,
  textStream,
  thinkingStream,
  toolMessage,
  toolStream,
} from '../../../../support/mock-anthropic.ts';
import type { MockServer } from '../../../../support/mock-http.ts';
import { sseEvent } from '../../../../support/mock-http.ts';
import { assemble, checkStreamShape, ctxFor, localUpstream, parseSse, pieces, readText, runStream } from '../../../../support/native-harness.ts';
import { conversation, PNG_BASE64, TEXT_ANSWER, TOOL_ANSWER, WEATHER_TOOL } from '../../../../support/native-fixtures.ts';

const req = (body: Record<string, unknown>, over: Parameters<typeof ctxFor>[1] = {}) => {
  const ctx = ctxFor(body, over);
  return anthropic.transformRequest!('chatComplete', body, ctx) as Record<string, unknown>;
};
const res = (json: unknown, body: Record<string, unknown> = { model: ANTHROPIC_MODEL, messages: [] }, over: Parameters<typeof ctxFor>[1] = {}) =>
  anthropic.transformResponse!('chatComplete', json, ctxFor(body, over), {}) as Record<string, any>;

function refusal(fn: () => unknown): { path: string; code: string | null } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    const e = err as ValidationError;
    expect(e.status).toBe(400);
    return { path: e.problems[0]!.path, code: e.openaiCode };
  }
  throw new Error('expected a ValidationError');
}

describe('anthropic request transform', () => {
  it('maps the system prompt, a multi-turn tool round trip and the tools', () => {
    const body = req(conversation(ANTHROPIC_MODEL));
    expect(body).toEqual({
      model: ANTHROPIC_MODEL,
      system: [{ type: 'text', text: 'You are a weather bot.' }],
      max_tokens: 4096,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What is the weather in Paris?' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_paris', name: 'get_weather', input: { city: 'Paris' } }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'call_paris', content: '{"temp_c":18}' }],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'It is 18°C in Paris.' }] },
        { role: 'user', content: [{ type: 'text', text: 'And in Rome and Milan?' }] },
      ],
      tools: [{ name: 'get_weather', description: 'Current weather for a city', input_schema: WEATHER_TOOL.function.parameters }],
    });
  });

  it('merges parallel tool results into one user turn and keeps cache_control on system parts', () => {
    const body = req({
      model: 'm',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }] },
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'a', type: 'function', function: { name: 'w', arguments: '{"city":"Rome"}' } },
            { id: 'b', type: 'function', function: { name: 'w', arguments: '{"city":"Milan"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'a', content: '20' },
        { role: 'tool', tool_call_id: 'b', content: [{ type: 'text', text: '19' }] },
        { role: 'user', content: 'thanks' },
      ],
    });
    expect(body.system).toEqual([
      { type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Be brief.' },
    ]);
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'weather?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'a', name: 'w', input: { city: 'Rome' } },
          { type: 'tool_use', id: 'b', name: 'w', input: { city: 'Milan' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: '20' },
          { type: 'tool_result', tool_use_id: 'b', content: '19' },
          { type: 'text', text: 'thanks' },
        ],
      },
    ]);
  });

  it('sends base64 images as base64 sources, URLs as url sources, PDFs as documents', () => {
    const body = req({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
          ],
        },
      ],
    });
    expect((body.messages as any[])[0].content).toEqual([
      { type: 'text', text: 'Compare' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
    ]);
  });

  it('maps tool_choice auto, none, required and named, and parallel_tool_calls false', () => {
    const base = { model: 'm', messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL] };
    expect(req({ ...base, tool_choice: 'auto' }).tool_choice).toEqual({ type: 'auto' });
    expect(req({ ...base, tool_choice: 'none' }).tool_choice).toEqual({ type: 'none' });
    expect(req({ ...base, tool_choice: 'required' }).tool_choice).toEqual({ type: 'any' });
    expect(req({ ...base, tool_choice: { type: 'function', function: { name: 'get_weather' } } }).tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
    expect(req({ ...base, parallel_tool_calls: false }).tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(req({ ...base, tool_choice: 'required', parallel_tool_calls: false }).tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(req({ ...base, parallel_tool_calls: true }).tool_choice).toBeUndefined();
  });

  it('maps sampling, stop, max_completion_tokens, user, and passes fields OpenAI does not define', () => {
    const body = req({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 100,
      max_completion_tokens: 200,
      stop: ['END'],
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      user: 'user-7',
      stream: true,
      stream_options: { include_usage: true },
      container: 'container_1',
      n: 1,
      logprobs: false,
      frequency_penalty: 0,
    });
    expect(body).toMatchObject({
      max_tokens: 200,
      stop_sequences: ['END'],
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'user-7' },
      stream: true,
      container: 'container_1',
    });
    for (const dropped of ['n', 'logprobs', 'frequency_penalty', 'stream_options', 'stop', 'user', 'max_completion_tokens'])
      expect(body).not.toHaveProperty(dropped);
  });

  it.each([
    ['n', { n: 2 }],
    ['logprobs', { logprobs: true }],
    ['seed', { seed: 7 }],
    ['presence_penalty', { presence_penalty: 0.5 }],
    ['logit_bias', { logit_bias: { '50256': -100 } }],
    ['reasoning_effort', { reasoning_effort: 'high' }],
    ['audio', { audio: { voice: 'alloy', format: 'mp3' } }],
  ])('refuses %s with a 400 naming it', (param, extra) => {
    const r = refusal(() => req({ model: 'm', messages: [{ role: 'user', content: 'x' }], ...extra }));
    expect(r).toEqual({ path: param, code: 'unsupported_parameter' });
  });

  it('refuses tool call arguments that are not JSON, naming the message', () => {
    const r = refusal(() =>
      req({
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'w', arguments: '{oops' } }] },
        ],
      }),
    );
    expect(r.path).toBe('messages[1].tool_calls[0].function.arguments');
  });

  it('json_object asks through the system prompt; json_schema forces a tool whose input becomes the content', () => {
    const jsonObject = req({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } });
    expect(JSON.stringify(jsonObject.system)).toContain('valid JSON object');

    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const body = { model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'place', schema } } };
    const sent = req(body);
    expect(sent.tools).toEqual([{ name: 'json_response', description: 'Returns the answer as place', input_schema: schema }]);
    expect(sent.tool_choice).toEqual({ type: 'tool', name: 'json_response' });

    const out = res(
      { ...textMessage(), content: [{ type: 'tool_use', id: 't', name: 'json_response', input: { city: 'Paris' } }], stop_reason: 'tool_use' },
      body,
    );
    expect(out.choices[0].message).toEqual({ role: 'assistant', content: '{"city":"Paris"}', refusal: null });
    expect(out.choices[0].finish_reason).toBe('stop');

    const withTools = req({ ...body, tools: [WEATHER_TOOL] });
    expect(withTools.tool_choice).toBeUndefined();
    expect(JSON.stringify(withTools.system)).toContain('JSON Schema');
  });

  it('json_schema output streams as content', () => {
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'p', schema: { type: 'object' } } },
    };
    const chunks = [
      sseEvent({ type: 'message_start', message: { id: 'msg_j', model: 'm', usage: { input_tokens: 5, output_tokens: 1 } } }),
      sseEvent({ type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 't', name: 'json_response', input: {} } }),
      sseEvent({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"a":' } }),
      sseEvent({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '1}' } }),
      sseEvent({ type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 4 } }),
    ];
    const a = assemble(runStream(anthropicStream(ctxFor(body)), pieces(chunks)).events);
    expect(a.content).toBe('{"a":1}');
    expect(a.toolCalls).toEqual([]);
    expect(a.finishReasons).toEqual(['stop']);
  });

  it('thinking: refused under strict compliance, mapped with its budget otherwise', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'x' }], thinking: { type: 'enabled', budget_tokens: 2048 } };
    expect(refusal(() => req(body)).path).toBe('thinking');
    const sent = req(body, { strictOpenAICompliance: false });
    expect(sent.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(sent.max_tokens).toBe(2048 + 4096);
    expect(req({ ...body, thinking: { type: 'disabled' } })).not.toHaveProperty('thinking');
  });

  it('replays thinking blocks of an assistant turn (content_blocks) before its tool calls', () => {
    const sent = req(
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            content_blocks: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }],
            tool_calls: [{ id: 'a', type: 'function', function: { name: 'w', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'a', content: 'ok' },
        ],
      },
      { strictOpenAICompliance: false },
    );
    expect((sent.messages as any[])[1].content).toEqual([
      { type: 'thinking', thinking: 'hmm', signature: 'sig' },
      { type: 'tool_use', id: 'a', name: 'w', input: {} },
    ]);
  });

  it('folds the deprecated functions API into tools and answers with function_call', () => {
    const body = {
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      functions: [WEATHER_TOOL.function],
      function_call: { name: 'get_weather' },
    };
    const sent = req(body);
    expect(sent.tools).toEqual([{ name: 'get_weather', description: 'Current weather for a city', input_schema: WEATHER_TOOL.function.parameters }]);
    expect(sent.tool_choice).toEqual({ type: 'tool', name: 'get_weather' });
    const out = res(toolMessage(), body);
    expect(out.choices[0].message.function_call).toEqual({ name: 'get_weather', arguments: '{"city":"Rome"}' });
    expect(out.choices[0].message.tool_calls).toBeUndefined();
    expect(out.choices[0].finish_reason).toBe('function_call');
  });
});

describe('anthropic response transform', () => {
  it('maps a text message with usage', () => {
    const out = res(textMessage());
    expect(out).toEqual({
      id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      object: 'chat.completion',
      created: expect.any(Number),
      model: ANTHROPIC_MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: TEXT_ANSWER.text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28, prompt_tokens_details: { cached_tokens: 0 } },
    });
  });

  it('counts cache reads and writes in prompt_tokens; cached_tokens are the reads; extras only without strict compliance', () => {
    const json = textMessage({ input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 50 });
    expect(res(json).usage).toEqual({ prompt_tokens: 160, completion_tokens: 8, total_tokens: 168, prompt_tokens_details: { cached_tokens: 100 } });
    expect(res(json, undefined, { strictOpenAICompliance: false }).usage).toMatchObject({ cache_read_input_tokens: 100, cache_creation_input_tokens: 50 });
  });

  it('maps parallel tool calls', () => {
    const out = res(toolMessage());
    expect(out.choices[0].finish_reason).toBe('tool_calls');
    expect(out.choices[0].message.content).toBeNull();
    expect(out.choices[0].message.tool_calls).toEqual(
      TOOL_ANSWER.calls.map((c, i) => ({ id: `toolu_0${i + 1}A09q90qw90lq917835lq9`, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    );
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
  ])('maps stop_reason %s to %s', (stop, finish) => {
    const json = { ...textMessage(), stop_reason: stop };
    expect(res(json).choices[0].finish_reason).toBe(finish === 'tool_calls' ? 'stop' : finish);
  });

  it('returns reasoning in content_blocks only without strict compliance', () => {
    const json = {
      ...textMessage(),
      content: [
        { type: 'thinking', thinking: 'Let me think', signature: 'sig1' },
        { type: 'text', text: 'Paris.' },
      ],
    };
    expect(res(json).choices[0].message).toEqual({ role: 'assistant', content: 'Paris.', refusal: null });
    expect(res(json, undefined, { strictOpenAICompliance: false }).choices[0].message.content_blocks).toEqual([
      { type: 'thinking', thinking: 'Let me think', signature: 'sig1' },
      { type: 'text', text: 'Paris.' },
    ]);
  });
});

describe('anthropic stream transform', () => {
  const streamBody = (includeUsage: boolean) => ({
    model: ANTHROPIC_MODEL,
    messages: [],
    stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });

  it.each([true, false])('text stream (include_usage %s): role first, finish last, usage reported either way', (includeUsage) => {
    const run = runStream(anthropicStream(ctxFor(streamBody(includeUsage))), pieces(textStream()));
    checkStreamShape(run, includeUsage);
    const a = assemble(run.events);
    expect(a.roles).toEqual(['assistant']);
    expect(a.content).toBe(TEXT_ANSWER.text);
    expect(a.finishReasons).toEqual(['stop']);
    expect(run.outcome.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
    if (includeUsage) expect(a.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8 });
    expect(run.events[0]).toMatchObject({ id: 'msg_stream_text', object: 'chat.completion.chunk', model: ANTHROPIC_MODEL });
  });

  it('streams parallel tool calls with indexes and arguments', () => {
    const run = runStream(anthropicStream(ctxFor(streamBody(true))), pieces(toolStream(), 5));
    checkStreamShape(run, true);
    const a = assemble(run.events);
    expect(a.toolCalls).toEqual([
      { id: 'toolu_s0', name: 'get_weather', arguments: '{"city":"Rome"}' },
      { id: 'toolu_s1', name: 'get_weather', arguments: '{"city":"Milan"}' },
    ]);
    expect(a.finishReasons).toEqual(['tool_calls']);
  });

  it('streams thinking as content_blocks deltas without strict compliance only', () => {
    const strict = assemble(runStream(anthropicStream(ctxFor(streamBody(false))), pieces(thinkingStream())).events);
    expect(strict.thinking).toBe('');
    expect(strict.content).toBe('Paris.');
    const run = runStream(anthropicStream(ctxFor(streamBody(false), { strictOpenAICompliance: false })), pieces(thinkingStream()));
    expect(assemble(run.events).thinking).toBe('Paris is in France. ');
    expect(run.text).toContain('"signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3h"');
  });

  it('turns an error event into an OpenAI error event and ends the stream', () => {
    const chunks = [textStream()[0]!, sseEvent({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'error')];
    const run = runStream(anthropicStream(ctxFor(streamBody(false))), pieces(chunks));
    expect(run.done).toBe(true);
    expect(run.events.at(-1)).toEqual({ error: { message: 'Overloaded', type: 'api_error', param: null, code: 'overloaded_error' } });
    expect(run.outcome.error?.error.code).toBe('overloaded_error');
  });

  it('reports a stream cut before message_delta as an error, not as a complete answer', () => {
    const run = runStream(anthropicStream(ctxFor(streamBody(false))), pieces(textStream().slice(0, 4)));
    expect(assemble(run.events).errors).toHaveLength(1);
    expect(run.outcome.error?.error.code).toBe('stream_truncated');
  });
});

describe('anthropic errors', () => {
  it.each([
    [400, 'invalid_request_error', 'invalid_request_error'],
    [401, 'authentication_error', 'authentication_error'],
    [429, 'rate_limit_error', 'rate_limit_error'],
    [529, 'overloaded_error', 'api_error'],
  ])('%i %s keeps the code and gets OpenAI type %s', (status, type, openaiType) => {
    const reply = anthropicErrorReply(status, type, 'nope');
    expect(anthropic.transformError(status, JSON.stringify(reply.json), {})).toEqual({ error: { message: 'nope', type: openaiType, param: null, code: type } });
  });

  it('wraps a non-JSON error page', () => {
    expect(anthropic.transformError(502, '<html><body>Bad Gateway</body></html>', {}).error.message).toBe('The provider answered 502: Bad Gateway');
  });
});

describe('anthropic over HTTP', () => {
  let mock: MockServer;
  const up = localUpstream();
  beforeAll(async () => {
    mock = await startMockAnthropic();
  });
  afterAll(async () => {
    up.close();
    await mock.close();
  });

  const call = (body: Record<string, unknown>, over: Parameters<typeof ctxFor>[1] = {}, onOutcome?: (o: NativeOutcome) => void) =>
    callNative({ provider: anthropic, endpoint: 'chatComplete', ctx: ctxFor(body, over), send: up.send, baseUrl: `${mock.url}/v1`, onOutcome });

  it('sends the key, the default version and the beta header, and answers OpenAI JSON', async () => {
    let outcome: NativeOutcome | undefined;
    const answer = await call(
      conversation(ANTHROPIC_MODEL),
      { apiKey: 'sk-ant-test', options: { anthropic_beta: 'prompt-caching-2024-07-31' } },
      (o) => (outcome = o),
    );
    const sent = mock.received.at(-1)!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe('sk-ant-test');
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
    expect(sent.headers.authorization).toBeUndefined();
    expect(answer.status).toBe(200);
    const json = JSON.parse(await readText(answer));
    expect(json.choices[0].message.tool_calls).toHaveLength(2);
    expect(outcome).toMatchObject({ status: 200, finishReason: 'tool_calls', usage: { prompt_tokens: 30, completion_tokens: 12 } });
  });

  it('takes anthropic_version from the options', async () => {
    await call({ model: ANTHROPIC_MODEL, messages: [{ role: 'user', content: 'hi' }] }, { options: { anthropic_version: '2024-01-01' } });
    expect(mock.received.at(-1)!.headers['anthropic-version']).toBe('2024-01-01');
  });

  it('streams OpenAI chunks and reports the usage at the end', async () => {
    let outcome: NativeOutcome | undefined;
    const answer = await call({ model: ANTHROPIC_MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true }, {}, (o) => (outcome = o));
    expect(answer.headers['content-type']).toContain('text/event-stream');
    const { events, done } = parseSse(await readText(answer));
    expect(done).toBe(true);
    expect(assemble(events).content).toBe(TEXT_ANSWER.text);
    expect(events.some((e) => e.usage)).toBe(false);
    expect(outcome?.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 });
  });

  it('keeps the status and retry-after of an error and answers in OpenAI shape', async () => {
    mock.queue.push({
      ...anthropicErrorReply(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'),
      headers: { 'retry-after': '7' },
    });
    let outcome: NativeOutcome | undefined;
    const answer = await call({ model: ANTHROPIC_MODEL, messages: [{ role: 'user', content: 'hi' }] }, {}, (o) => (outcome = o));
    expect(answer.status).toBe(429);
    expect(answer.headers['retry-after']).toBe('7');
    expect(JSON.parse(await readText(answer))).toEqual({
      error: { message: 'Number of request tokens has exceeded your per-minute rate limit', type: 'rate_limit_error', param: null, code: 'rate_limit_error' },
    });
    expect(outcome?.error?.error.type).toBe('rate_limit_error');
  });
});
