import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import {
  AnthropicStreamWriter,
  anthropicToOpenAI,
  estimateInputTokens,
  isPassThrough,
  openAIToAnthropic,
  passThroughRequest,
  toAnthropicError,
} from '../../../../layers/core/src/gateway/anthropic-inbound.ts';
import { parseChatRequest } from '../../../../layers/core/src/gateway/validate/chat.ts';
import { anthropic } from '../../../../layers/core/src/providers/native/anthropic.ts';
import { cohereStream } from '../../../../layers/core/src/providers/native/cohere.ts';
import { geminiStream } from '../../../../layers/core/src/providers/native/google.ts';
import { azureStream } from '../../../support/mock-azure.ts';
import { textEvents, toolEvents } from '../../../support/mock-cohere.ts';
import { textChunks } from '../../../support/mock-google.ts';
import { ctxFor, pieces, runStream } from '../../../support/native-harness.ts';
import { PNG_BASE64, TEXT_ANSWER, TOOL_ANSWER } from '../../../support/native-fixtures.ts';

const WEATHER = { name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

/** An Anthropic SDK-style request: system with cache_control, image, tool round trip, tools. */
const MESSAGES_REQUEST = {
  model: 'claude-sonnet-4-5',
  max_tokens: 1024,
  system: [{ type: 'text', text: 'You are a weather bot.', cache_control: { type: 'ephemeral' } }],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
        { type: 'text', text: 'Where is this, and what is the weather?' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C' },
        { type: 'text', text: 'And Rome?' },
      ],
    },
  ],
  tools: [WEATHER],
  tool_choice: { type: 'auto', disable_parallel_tool_use: true },
  stop_sequences: ['END'],
  temperature: 0.2,
  top_k: 10,
  metadata: { user_id: 'u-1' },
};

function problemPath(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).problems[0]!.path;
  }
  throw new Error('expected a ValidationError');
}

describe('Anthropic request -> OpenAI chat request', () => {
  it('converts system, images, tool use and results, tools, tool choice and parameters; the result validates', () => {
    const openai = anthropicToOpenAI(MESSAGES_REQUEST);
    expect(openai).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'You are a weather bot.', cache_control: { type: 'ephemeral' } }] },
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
            { type: 'text', text: 'Where is this, and what is the weather?' },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: '18°C' },
        { role: 'user', content: 'And Rome?' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: WEATHER.input_schema } }],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      stop: ['END'],
      temperature: 0.2,
      top_k: 10,
      user: 'u-1',
    });
    expect(() => parseChatRequest(openai)).not.toThrow();
  });

  it('goes back to the same Anthropic request through the Anthropic provider', () => {
    const openai = anthropicToOpenAI(MESSAGES_REQUEST);
    const back = anthropic.transformRequest!('chatComplete', openai, ctxFor(openai)) as Record<string, unknown>;
    expect(back).toEqual({
      ...MESSAGES_REQUEST,
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      messages: [MESSAGES_REQUEST.messages[0], MESSAGES_REQUEST.messages[1], MESSAGES_REQUEST.messages[2]],
    });
  });

  it('streams ask for usage; thinking and documents carry over', () => {
    const openai = anthropicToOpenAI({
      model: 'm',
      max_tokens: 50,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'a.pdf' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hm', signature: 's' },
            { type: 'text', text: 'ok' },
          ],
        },
        { role: 'user', content: 'go on' },
      ],
    });
    expect(openai).toMatchObject({ stream: true, stream_options: { include_usage: true }, thinking: { type: 'enabled', budget_tokens: 1024 } });
    expect((openai.messages as any[])[0].content).toEqual([{ type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } }]);
    expect((openai.messages as any[])[1]).toEqual({ role: 'assistant', content: 'ok', content_blocks: [{ type: 'thinking', thinking: 'hm', signature: 's' }] });
  });

  it('maps tool_choice any, tool and none', () => {
    const base = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], tools: [WEATHER] };
    expect(anthropicToOpenAI({ ...base, tool_choice: { type: 'any' } }).tool_choice).toBe('required');
    expect(anthropicToOpenAI({ ...base, tool_choice: { type: 'none' } }).tool_choice).toBe('none');
    expect(anthropicToOpenAI({ ...base, tool_choice: { type: 'tool', name: 'get_weather' } }).tool_choice).toEqual({
      type: 'function',
      function: { name: 'get_weather' },
    });
  });

  it('refuses what other providers cannot serve, naming the field', () => {
    const base = { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] };
    expect(problemPath(() => anthropicToOpenAI({ ...base, max_tokens: undefined }))).toBe('max_tokens');
    expect(problemPath(() => anthropicToOpenAI({ ...base, messages: [] }))).toBe('messages');
    expect(problemPath(() => anthropicToOpenAI({ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }))).toBe('tools[0].type');
    expect(problemPath(() => anthropicToOpenAI({ ...base, container: 'c' }))).toBe('container');
    expect(problemPath(() => anthropicToOpenAI({ ...base, messages: [{ role: 'user', content: [{ type: 'search_result', source: 'x' }] }] }))).toBe(
      'messages[0].content[0].type',
    );
    expect(problemPath(() => anthropicToOpenAI({ ...base, messages: [{ role: 'system', content: 'x' }] }))).toBe('messages[0].role');
  });
});

describe('OpenAI answer -> Anthropic Message', () => {
  it('converts text, tool calls, stop reasons and usage (cache reads apart)', () => {
    const message = openAIToAnthropic(
      {
        id: 'chatcmpl-1',
        model: 'gemini-2.5-flash',
        choices: [
          {
            index: 0,
            finish_reason: 'tool_calls',
            message: {
              role: 'assistant',
              content: 'Looking up.',
              content_blocks: [{ type: 'thinking', thinking: 'hm', signature: 's' }],
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }],
            },
          },
        ],
        usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, prompt_tokens_details: { cached_tokens: 60 } },
      },
      'requested',
    );
    expect(message).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'gemini-2.5-flash',
      content: [
        { type: 'thinking', thinking: 'hm', signature: 's' },
        { type: 'text', text: 'Looking up.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Rome' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 40, output_tokens: 10, cache_read_input_tokens: 60 },
    });
    const stop = (finish: string) => openAIToAnthropic({ choices: [{ finish_reason: finish, message: { content: 'x' } }] }, 'm').stop_reason;
    expect([stop('stop'), stop('length'), stop('content_filter')]).toEqual(['end_turn', 'max_tokens', 'refusal']);
  });

  it('converts errors keeping the status', () => {
    expect(toAnthropicError(429, { error: { message: 'slow down', type: 'rate_limit_error', param: null, code: null } })).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: 'slow down' },
    });
    expect(toAnthropicError(400, { error: { message: 'max_tokens: is required' } }).error).toEqual({
      type: 'invalid_request_error',
      message: 'max_tokens: is required',
    });
    expect((toAnthropicError(503, {}).error as any).type).toBe('api_error');
  });
});

/** Replays Anthropic SSE text into the final message, as the Anthropic SDK's accumulator does. */
function accumulate(sse: string): { events: string[]; content: any[]; stop: string | null; usage: any } {
  const events: string[] = [];
  const content: any[] = [];
  const json: string[] = [];
  let stop: string | null = null;
  let usage: any;
  for (const block of sse.split('\n\n').filter(Boolean)) {
    const [eventLine, dataLine] = block.split('\n') as [string, string];
    const type = eventLine.replace('event: ', '');
    const data = JSON.parse(dataLine.replace('data: ', ''));
    expect(data.type).toBe(type);
    events.push(type);
    if (type === 'content_block_start') {
      content[data.index] = { ...data.content_block };
      json[data.index] = '';
    }
    if (type === 'content_block_delta') {
      const d = data.delta;
      if (d.type === 'text_delta') content[data.index].text += d.text;
      if (d.type === 'input_json_delta') json[data.index] += d.partial_json;
      if (d.type === 'thinking_delta') content[data.index].thinking += d.thinking;
    }
    if (type === 'content_block_stop' && content[data.index].type === 'tool_use') content[data.index].input = JSON.parse(json[data.index] || '{}');
    if (type === 'message_delta') {
      stop = data.delta.stop_reason;
      usage = data.usage;
    }
  }
  return { events, content, stop, usage };
}

describe('OpenAI stream -> Anthropic stream events', () => {
  it('turns a text stream into message_start, one text block, message_delta with usage, message_stop', () => {
    const w = new AnthropicStreamWriter('requested');
    const openaiSse = azureStream(false, true).join('');
    const out =
      pieces(openaiSse, 13)
        .map((p) => w.push(p))
        .join('') + w.end();
    const acc = accumulate(out);
    expect(acc.events).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(acc.content).toEqual([{ type: 'text', text: TEXT_ANSWER.text }]);
    expect(acc.stop).toBe('end_turn');
    expect(acc.usage).toEqual({ input_tokens: 20, output_tokens: 8 });
  });

  it('turns streamed parallel tool calls (from Cohere) into tool_use blocks', () => {
    const openai = runStream(cohereStream(ctxFor({ model: 'c', messages: [], stream: true, stream_options: { include_usage: true } })), pieces(toolEvents()));
    const w = new AnthropicStreamWriter('c');
    const acc = accumulate(w.push(openai.text) + w.end());
    expect(acc.content).toEqual(TOOL_ANSWER.calls.map((c, i) => ({ type: 'tool_use', id: `get_weather_s${i}`, name: c.name, input: JSON.parse(c.arguments) })));
    expect(acc.stop).toBe('tool_use');
    expect(acc.usage).toEqual({ input_tokens: 30, output_tokens: 12 });
  });

  it('works on any native provider stream (Gemini) and on streams without [DONE]', () => {
    const openai = runStream(geminiStream(ctxFor({ model: 'g', messages: [], stream: true, stream_options: { include_usage: true } })), pieces(textChunks()));
    const w = new AnthropicStreamWriter('g');
    const text = openai.text.replace('data: [DONE]\n\n', '');
    const acc = accumulate(w.push(text) + w.end());
    expect(acc.content).toEqual([{ type: 'text', text: TEXT_ANSWER.text }]);
    expect(acc.events.at(-1)).toBe('message_stop');
    const cohereText = runStream(cohereStream(ctxFor({ model: 'c', messages: [], stream: true })), pieces(textEvents()));
    expect(accumulate(new AnthropicStreamWriter('c').push(cohereText.text)).content).toEqual([{ type: 'text', text: TEXT_ANSWER.text }]);
  });

  it('passes an error event on as an Anthropic error event', () => {
    const w = new AnthropicStreamWriter('m');
    const out = w.push('data: {"error":{"message":"Overloaded","type":"api_error"}}\n\n') + w.end();
    expect(out).toContain('event: error\ndata: {"type":"error","error":{"type":"api_error","message":"Overloaded"}}');
  });
});

describe('pass-through and count_tokens', () => {
  it('passes Anthropic targets through with the client version and beta headers', async () => {
    expect(isPassThrough({ provider: 'anthropic' })).toBe(true);
    expect(isPassThrough({ provider: 'bedrock' })).toBe(false);
    const headers = new Headers({ 'anthropic-version': '2023-06-01', 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
    const out = await passThroughRequest('{"model":"m"}', 'count_tokens', ctxFor({ model: 'm' }, { apiKey: 'sk-ant' }), headers);
    expect(out.url.href).toBe('https://api.anthropic.com/v1/messages/count_tokens');
    expect(out.headers).toMatchObject({ 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
    expect(out.body).toBe('{"model":"m"}');
  });

  it('estimates input tokens for other targets', () => {
    expect(estimateInputTokens({ system: 'abcd', messages: [{ role: 'user', content: 'abcdefgh' }] })).toEqual({ input_tokens: 3 + 1 });
    expect(estimateInputTokens({ messages: [{ role: 'user', content: [{ type: 'image', source: {} }] }] }).input_tokens).toBe(1 + 1600);
  });
});
