import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ValidationError } from '../../../../../layers/core/src/http/errors.ts';
import { chatRequestSchema, parseChatRequest } from '../../../../../layers/core/src/gateway/validate/chat.ts';
import { formatPath, PARSE_CONTEXT, problemsFromZod } from '../../../../../layers/core/src/gateway/validate/common.ts';

const user = { role: 'user', content: 'Hello' };
const base = { model: 'gpt-4o', messages: [user] };
const withBase = (extra: Record<string, unknown>): Record<string, unknown> => ({ ...base, ...extra });
const withMessage = (msg: unknown): Record<string, unknown> => ({ ...base, messages: [user, msg] });
const weatherTool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };

function rejection(body: unknown): ValidationError {
  try {
    parseChatRequest(body);
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected the body to be rejected');
}

describe('parseChatRequest: valid bodies', () => {
  it('accepts a minimal request', () => {
    expect(parseChatRequest(base)).toEqual(base);
  });

  it('accepts a rich request unchanged', () => {
    const body = {
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use metric units.' }] },
        {
          role: 'user',
          name: 'ada',
          content: [
            { type: 'text', text: 'What is the weather where this photo was taken?' },
            { type: 'image_url', image_url: { url: 'https://example.com/p.png', detail: 'low' } },
            { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":3}' },
        { role: 'function', name: 'get_weather', content: null },
      ],
      tools: [weatherTool, { type: 'function', function: { name: 'lookup-v2_x', description: 'Looks up', strict: true } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'weather', strict: true, schema: { type: 'object', properties: {} } },
      },
      stream: true,
      stream_options: { include_usage: true },
      logit_bias: { '50256': -100, '13': 2.5 },
      stop: ['\n\n', 'END'],
      temperature: 0,
      top_p: 1,
      frequency_penalty: -2,
      presence_penalty: 2,
      logprobs: true,
      top_logprobs: 20,
      max_completion_tokens: 512,
      n: 128,
      seed: 9007199254740992,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      user: 'user-123',
    };
    expect(parseChatRequest(body)).toEqual(body);
  });

  it('accepts null for every nullable field', () => {
    const body = withBase({
      frequency_penalty: null,
      presence_penalty: null,
      logit_bias: null,
      logprobs: null,
      top_logprobs: null,
      max_tokens: null,
      max_completion_tokens: null,
      n: null,
      seed: null,
      stop: null,
      stream: null,
      stream_options: null,
      thinking: null,
      temperature: null,
      top_p: null,
    });
    expect(parseChatRequest(body)).toEqual(body);
  });

  it('accepts the other allowed forms', () => {
    for (const extra of [
      { stop: 'END' },
      { tool_choice: 'none' },
      { tools: [weatherTool], tool_choice: 'required' },
      { response_format: { type: 'json_object' } },
      { thinking: { type: 'disabled' } },
      { functions: [{ name: 'f', parameters: {} }], function_call: { name: 'f' } },
      { function_call: 'auto', functions: [{ name: 'f' }] },
      { max_tokens: 1, top_logprobs: 0, logprobs: true },
    ]) {
      expect(() => parseChatRequest(withBase(extra)), JSON.stringify(extra)).not.toThrow();
    }
    // An SDK echoing a response message back sends nulls for the fields it lacks.
    expect(() => parseChatRequest(withMessage({ role: 'assistant', content: 'Hi!', tool_calls: null, function_call: null }))).not.toThrow();
    expect(() => parseChatRequest(withMessage({ role: 'assistant', function_call: { name: 'f', arguments: '{}' } }))).not.toThrow();
  });

  it('keeps unknown fields at the top level, in messages, in content parts and in tools', () => {
    const body = {
      model: 'claude-sonnet',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }], x_trace: 7 },
        { role: 'assistant', content: 'Hello', reasoning_content: 'thought' },
      ],
      tools: [{ type: 'function', function: { name: 'f', x_hint: 1 }, cache_control: { type: 'ephemeral' } }],
      metadata: { team: 'a' },
      top_k: 40,
      provider_specific: { nested: [1, 2, 3] },
    };
    const parsed = parseChatRequest(body);
    expect(parsed).toEqual(body);
    expect(parsed['top_k']).toBe(40);
    expect(parsed.messages[0]?.['x_trace']).toBe(7);
  });

  it('does not add absent optional fields', () => {
    expect(Object.keys(parseChatRequest(base))).toEqual(['model', 'messages']);
  });
});

// [description, body, expected param (first problem path), phrase the message contains]
const invalid: ReadonlyArray<readonly [string, unknown, string, string]> = [
  ['a string body', 'hello', '', 'request body must be a JSON object'],
  ['an array body', [base], '', 'request body must be a JSON object'],
  ['a null body', null, '', 'request body must be a JSON object'],
  ['missing model', { messages: [user] }, 'model', 'is required'],
  ['empty model', withBase({ model: '' }), 'model', 'must not be empty'],
  ['numeric model', withBase({ model: 4 }), 'model', 'must be a string'],
  ['missing messages', { model: 'm' }, 'messages', 'is required'],
  ['empty messages', withBase({ messages: [] }), 'messages', 'at least 1 message'],
  ['messages not an array', withBase({ messages: 'hi' }), 'messages', 'must be an array'],
  ['a message that is not an object', withBase({ messages: ['hi'] }), 'messages[0]', 'must be an object'],
  [
    'an unknown role',
    withBase({ messages: [{ role: 'wizard', content: 'x' }] }),
    'messages[0].role',
    'must be one of system, developer, user, assistant, tool, function',
  ],
  ['a missing role', withBase({ messages: [{ content: 'x' }] }), 'messages[0].role', 'is required'],
  ['user without content', withBase({ messages: [{ role: 'user' }] }), 'messages[0].content', 'is required'],
  [
    'system with null content',
    withBase({ messages: [{ role: 'system', content: null }] }),
    'messages[0].content',
    'must be a string or an array of content parts',
  ],
  ['numeric content', withBase({ messages: [{ role: 'user', content: 3 }] }), 'messages[0].content', 'must be a string or an array of content parts'],
  ['a content part without type', withBase({ messages: [{ role: 'user', content: [{ text: 'x' }] }] }), 'messages[0].content[0].type', 'is required'],
  [
    'a text part with non-string text',
    withBase({ messages: [{ role: 'user', content: [{ type: 'text', text: 1 }] }] }),
    'messages[0].content[0].text',
    'must be a string',
  ],
  [
    'an image_url part without url',
    withBase({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }),
    'messages[0].content[0].image_url.url',
    'is required',
  ],
  ['a message name that is not a string', withBase({ messages: [{ role: 'user', content: 'x', name: 5 }] }), 'messages[0].name', 'must be a string'],
  [
    'assistant with null content and no tool calls',
    withMessage({ role: 'assistant', content: null }),
    'messages[1].content',
    'is required unless tool_calls or function_call is present',
  ],
  [
    'a tool call of the wrong type',
    withMessage({ role: 'assistant', tool_calls: [{ id: 'c', type: 'code', function: { name: 'f', arguments: '{}' } }] }),
    'messages[1].tool_calls[0].type',
    'must be function',
  ],
  [
    'tool call arguments as an object',
    withMessage({ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] }),
    'messages[1].tool_calls[0].function.arguments',
    'must be a string',
  ],
  [
    'a tool call without id',
    withMessage({ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }),
    'messages[1].tool_calls[0].id',
    'is required',
  ],
  ['a tool message without tool_call_id', withMessage({ role: 'tool', content: 'x' }), 'messages[1].tool_call_id', 'is required'],
  ['a tool message without content', withMessage({ role: 'tool', tool_call_id: 'c' }), 'messages[1].content', 'is required'],
  ['a function message without name', withMessage({ role: 'function', content: 'x' }), 'messages[1].name', 'is required'],
  ['temperature above 2', withBase({ temperature: 2.5 }), 'temperature', 'must be between 0 and 2'],
  ['temperature as a string', withBase({ temperature: '1' }), 'temperature', 'must be a number'],
  ['top_p above 1', withBase({ top_p: 1.01 }), 'top_p', 'must be between 0 and 1'],
  ['frequency_penalty below -2', withBase({ frequency_penalty: -3 }), 'frequency_penalty', 'must be between -2 and 2'],
  ['presence_penalty above 2', withBase({ presence_penalty: 2.1 }), 'presence_penalty', 'must be between -2 and 2'],
  ['a logit bias above 100', withBase({ logit_bias: { '50256': 101 } }), 'logit_bias.50256', 'must be between -100 and 100'],
  ['a logit bias key that is not a token id', withBase({ logit_bias: { hello: 1 } }), 'logit_bias.hello', 'token id'],
  ['a non-numeric logit bias', withBase({ logit_bias: { '7': 'x' } }), 'logit_bias.7', 'must be a number'],
  ['logit_bias as an array', withBase({ logit_bias: [1] }), 'logit_bias', 'must be an object'],
  ['logprobs as a string', withBase({ logprobs: 'yes' }), 'logprobs', 'must be a boolean'],
  ['top_logprobs without logprobs', withBase({ top_logprobs: 5 }), 'top_logprobs', 'requires logprobs to be true'],
  ['top_logprobs with logprobs false', withBase({ top_logprobs: 5, logprobs: false }), 'top_logprobs', 'requires logprobs to be true'],
  ['top_logprobs above 20', withBase({ top_logprobs: 21, logprobs: true }), 'top_logprobs', 'must be between 0 and 20'],
  ['fractional top_logprobs', withBase({ top_logprobs: 1.5, logprobs: true }), 'top_logprobs', 'must be an integer'],
  ['max_tokens of 0', withBase({ max_tokens: 0 }), 'max_tokens', 'must be at least 1'],
  ['max_tokens as a string', withBase({ max_tokens: '100' }), 'max_tokens', 'must be an integer'],
  ['fractional max_completion_tokens', withBase({ max_completion_tokens: 10.5 }), 'max_completion_tokens', 'must be an integer'],
  ['n of 0', withBase({ n: 0 }), 'n', 'must be between 1 and 128'],
  ['n of 129', withBase({ n: 129 }), 'n', 'must be between 1 and 128'],
  ['fractional seed', withBase({ seed: 1.5 }), 'seed', 'must be an integer'],
  ['response_format as a string', withBase({ response_format: 'json' }), 'response_format', 'must be an object'],
  ['an unknown response_format type', withBase({ response_format: { type: 'xml' } }), 'response_format.type', 'must be one of text, json_object, json_schema'],
  ['json_schema format without json_schema', withBase({ response_format: { type: 'json_schema' } }), 'response_format.json_schema', 'is required'],
  [
    'json_schema without name',
    withBase({ response_format: { type: 'json_schema', json_schema: { schema: {} } } }),
    'response_format.json_schema.name',
    'is required',
  ],
  ['five stop sequences', withBase({ stop: ['a', 'b', 'c', 'd', 'e'] }), 'stop', 'must be at most 4 sequences'],
  ['an empty stop array', withBase({ stop: [] }), 'stop', 'at least 1 sequence'],
  ['a numeric stop', withBase({ stop: 5 }), 'stop', 'must be a string or an array of at most 4 strings'],
  ['a non-string stop sequence', withBase({ stop: ['a', 'b', 'c', 7] }), 'stop[3]', 'must be a string'],
  ['stream as a string', withBase({ stream: 'true' }), 'stream', 'must be a boolean'],
  ['stream_options without stream', withBase({ stream_options: { include_usage: true } }), 'stream_options', 'is only allowed when stream is true'],
  ['stream_options with stream false', withBase({ stream: false, stream_options: {} }), 'stream_options', 'is only allowed when stream is true'],
  ['include_usage as a string', withBase({ stream: true, stream_options: { include_usage: 'yes' } }), 'stream_options.include_usage', 'must be a boolean'],
  ['thinking enabled without budget', withBase({ thinking: { type: 'enabled' } }), 'thinking.budget_tokens', 'is required'],
  ['a thinking budget of 0', withBase({ thinking: { type: 'enabled', budget_tokens: 0 } }), 'thinking.budget_tokens', 'must be at least 1'],
  ['an unknown thinking type', withBase({ thinking: { type: 'on' } }), 'thinking.type', 'must be one of enabled, disabled'],
  ['tools as an object', withBase({ tools: weatherTool }), 'tools', 'must be an array'],
  ['129 tools', withBase({ tools: Array.from({ length: 129 }, () => weatherTool) }), 'tools', 'must have at most 128 tools'],
  ['a non-function tool', withBase({ tools: [{ type: 'retrieval' }] }), 'tools[0].type', 'must be function'],
  ['a tool without function', withBase({ tools: [{ type: 'function' }] }), 'tools[0].function', 'is required'],
  [
    'a tool name with spaces',
    withBase({ tools: [weatherTool, { type: 'function', function: { name: 'get weather' } }] }),
    'tools[1].function.name',
    'must be 1 to 64 letters, digits, underscores or dashes',
  ],
  ['a 65-character tool name', withBase({ tools: [{ type: 'function', function: { name: 'x'.repeat(65) } }] }), 'tools[0].function.name', 'must be 1 to 64'],
  [
    'tool parameters as an array',
    withBase({ tools: [{ type: 'function', function: { name: 'f', parameters: [] } }] }),
    'tools[0].function.parameters',
    'must be an object',
  ],
  [
    'tool strict as a string',
    withBase({ tools: [{ type: 'function', function: { name: 'f', strict: 'yes' } }] }),
    'tools[0].function.strict',
    'must be a boolean',
  ],
  [
    'an unknown tool_choice',
    withBase({ tools: [weatherTool], tool_choice: 'sometimes' }),
    'tool_choice',
    'must be none, auto, required or an object naming a function',
  ],
  ['tool_choice auto without tools', withBase({ tool_choice: 'auto' }), 'tool_choice', 'requires tools'],
  ['a named tool_choice without tools', withBase({ tool_choice: { type: 'function', function: { name: 'f' } } }), 'tool_choice', 'requires tools'],
  ['tool_choice required with empty tools', withBase({ tools: [], tool_choice: 'required' }), 'tool_choice', 'requires tools'],
  [
    'a tool_choice naming an absent function',
    withBase({ tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_time' } } }),
    'tool_choice.function.name',
    'must name a function in tools',
  ],
  [
    'a named tool_choice without name',
    withBase({ tools: [weatherTool], tool_choice: { type: 'function', function: {} } }),
    'tool_choice.function.name',
    'is required',
  ],
  ['parallel_tool_calls as a string', withBase({ parallel_tool_calls: 'yes' }), 'parallel_tool_calls', 'must be a boolean'],
  ['a numeric user', withBase({ user: 42 }), 'user', 'must be a string'],
  ['empty functions', withBase({ functions: [] }), 'functions', 'must have at least 1 item'],
  ['a function without name', withBase({ functions: [{ description: 'd' }] }), 'functions[0].name', 'is required'],
  ['an unknown function_call', withBase({ function_call: 'always' }), 'function_call', 'must be none, auto or an object naming a function'],
  ['a named function_call without name', withBase({ function_call: {} }), 'function_call.name', 'is required'],
];

describe('parseChatRequest: invalid bodies', () => {
  it('has a broad table', () => {
    expect(invalid.length).toBeGreaterThanOrEqual(35);
  });

  it.each(invalid)('rejects %s', (_name, body, param, phrase) => {
    const err = rejection(body);
    expect(err.status).toBe(400);
    // A problem with the whole body names no field: OpenAI's `param` is null then.
    expect(err.param).toBe(param === '' ? null : param);
    expect(err.problems[0]?.path).toBe(param);
    expect(err.problems[0]?.message).toContain(phrase);
  });

  it('reports every problem, in body order', () => {
    const err = rejection({
      model: '',
      messages: [{ role: 'wizard', content: 'x' }],
      temperature: 3,
    });
    expect(err.problems.map((p) => p.path)).toEqual(['model', 'messages[0].role', 'temperature']);
    expect(err.message).toBe(
      'model: must not be empty; messages[0].role: must be one of system, developer, user, assistant, tool, function; ' +
        'temperature: must be between 0 and 2',
    );
  });

  it('orders problems by their position in the body, not the schema', () => {
    const err = rejection({ top_p: 2, messages: [user], model: 'm', temperature: -1 });
    expect(err.param).toBe('top_p');
    expect(err.problems.map((p) => p.path)).toEqual(['top_p', 'temperature']);
    // Missing fields have no position; they follow the ones present.
    expect(rejection({ temperature: 5, messages: [user] }).problems.map((p) => p.path)).toEqual(['temperature', 'model']);
  });

  it('reports cross-field rules alongside field problems', () => {
    const err = rejection(withBase({ n: 1.5, top_logprobs: 2, stream_options: {}, tool_choice: 'auto', messages: [{ role: 'user' }] }));
    expect(err.problems).toEqual([
      { path: 'messages[0].content', message: 'is required' },
      { path: 'n', message: 'must be an integer' },
      { path: 'top_logprobs', message: 'requires logprobs to be true' },
      { path: 'stream_options', message: 'is only allowed when stream is true' },
      { path: 'tool_choice', message: 'requires tools to be specified' },
    ]);
  });

  it('gives one problem per wrong value, not one per failed rule', () => {
    expect(rejection(withBase({ top_logprobs: 'x' })).problems).toEqual([{ path: 'top_logprobs', message: 'must be an integer' }]);
    expect(rejection(withBase({ n: -0.5 })).problems).toEqual([{ path: 'n', message: 'must be an integer' }]);
  });
});

describe('common validation helpers', () => {
  it('formats paths in dotted/bracket form', () => {
    expect(formatPath([])).toBe('');
    expect(formatPath(['messages', 0, 'content', 2, 'image_url', 'url'])).toBe('messages[0].content[2].image_url.url');
    expect(formatPath(['logit_bias', '50256'])).toBe('logit_bias.50256');
    expect(formatPath(['metadata', 'a.b'])).toBe('metadata["a.b"]');
  });

  it('maps issues of any schema without a body to order by', () => {
    const schema = z.looseObject({ b: z.number().min(1), a: z.array(z.string()) });
    const result = schema.safeParse({ a: ['x', 1], b: 0 }, PARSE_CONTEXT);
    expect(result.success).toBe(false);
    expect(problemsFromZod(result.error?.issues ?? [])).toEqual([
      { path: 'b', message: 'must be at least 1' },
      { path: 'a[1]', message: 'must be a string' },
    ]);
  });

  it('exposes the schema for callers that want safeParse', () => {
    expect(chatRequestSchema.safeParse(base).success).toBe(true);
  });
});
