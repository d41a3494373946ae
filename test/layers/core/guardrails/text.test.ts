import { describe, expect, it } from 'vitest';
import { mapRequestText, mapResponseText, requestParts, requestText, responseText } from '../../../../layers/core/src/guardrails/text.ts';

const upper = (t: string) => t.toUpperCase();

describe('the text a model reads', () => {
  const chat = {
    model: 'm',
    messages: [
      { role: 'system', content: 'sys' },
      {
        role: 'developer',
        content: [
          { type: 'text', text: 'dev' },
          { type: 'image_url', image_url: { url: 'https://x/cat.png' } },
        ],
      },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: null, refusal: 'no', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'result' },
      { role: 'user', content: 'last' },
    ],
    tools: [{ type: 'function', function: { name: 'f', description: 'does f', parameters: {} } }],
  };

  it('chat: every message with its role, tool calls, tool results and tool descriptions; images not', () => {
    expect(requestParts('chatComplete', chat)).toEqual([
      { role: 'system', text: 'sys' },
      { role: 'developer', text: 'dev' },
      { role: 'user', text: 'first' },
      { role: 'assistant', text: 'no' },
      { role: 'assistant', text: '{"a":1}' },
      { role: 'tool', text: 'result' },
      { role: 'user', text: 'last' },
      { role: 'tool', text: 'does f' },
    ]);
    expect(requestText('chatComplete', chat, 'last_user')).toBe('last');
  });

  it('rewrites exactly what it reads, copying only what changed', () => {
    const out = mapRequestText('chatComplete', chat, upper)!;
    expect(requestParts('chatComplete', out).map((p) => p.text)).toEqual(['SYS', 'DEV', 'FIRST', 'NO', '{"A":1}', 'RESULT', 'LAST', 'DOES F']);
    expect((out.messages as unknown[])[1]).toMatchObject({ content: [{ text: 'DEV' }, { image_url: { url: 'https://x/cat.png' } }] });
    expect(chat.messages[0]!.content).toBe('sys');
    expect(mapRequestText('chatComplete', chat, (t) => t)).toBe(chat);
    const scoped = mapRequestText('chatComplete', chat, upper, 'last_user')!;
    expect((scoped.messages as { content: unknown }[]).map((m) => m.content)).toEqual(['sys', chat.messages[1]!.content, 'first', null, 'result', 'LAST']);
  });

  it('completions, embeddings and Responses', () => {
    expect(requestText('complete', { prompt: ['a', 'b'], suffix: 's' })).toBe('a\nb\ns');
    expect(requestText('embed', { input: [[1, 2], 'x'] })).toBe('x');
    const responses = {
      instructions: 'inst',
      prompt: { id: 'p', variables: { a: 'va', b: { type: 'input_text', text: 'vb' }, c: { type: 'input_image', image_url: 'u' } } },
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'q1' }] },
        { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c', output: 'out' },
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'thought' }] },
        { role: 'user', content: 'q2' },
      ],
    };
    expect(requestParts('createModelResponse', responses)).toEqual([
      { role: 'system', text: 'inst' },
      { role: 'user', text: 'va' },
      { role: 'user', text: 'vb' },
      { role: 'user', text: 'q1' },
      { role: 'assistant', text: '{}' },
      { role: 'tool', text: 'out' },
      { role: 'assistant', text: 'thought' },
      { role: 'user', text: 'q2' },
    ]);
    expect(requestText('createModelResponse', responses, 'last_user')).toBe('q2');
    expect(requestText('createModelResponse', { input: 'plain' }, 'last_user')).toBe('plain');
  });
});

describe('the text a model writes', () => {
  it('chat: content, refusal, reasoning, tool-call names and arguments', () => {
    const answer = {
      choices: [
        { message: { role: 'assistant', content: 'hi', reasoning_content: 'hmm', tool_calls: [{ function: { name: 'send', arguments: '{"t":1}' } }] } },
      ],
    };
    expect(responseText(answer)).toBe('hi\nsend\n{"t":1}\nhmm');
    const out = mapResponseText(answer, upper) as typeof answer;
    expect(out.choices[0]!.message.tool_calls[0]!.function).toEqual({ name: 'SEND', arguments: '{"T":1}' });
  });

  it('Responses: output items of every kind, output_text rebuilt from the rewritten output', () => {
    const answer = {
      output_text: 'hello',
      output: [
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'why' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello' }] },
        { type: 'function_call', name: 'f', arguments: '{"x":"y"}' },
      ],
    };
    expect(responseText(answer)).toBe('why\nhello\nf\n{"x":"y"}');
    expect((mapResponseText(answer, upper) as { output_text: string }).output_text).toBe('HELLO');
  });

  it('Anthropic: text, thinking and tool_use input, which stays JSON after a rewrite', () => {
    const answer = {
      content: [
        { type: 'thinking', thinking: 'plan' },
        { type: 'text', text: 'ok' },
        { type: 'tool_use', name: 'send', input: { token: 'abc' } },
      ],
    };
    expect(responseText(answer)).toBe('plan\nok\nsend\n{"token":"abc"}');
    const out = mapResponseText(answer, (t) => t.replace('abc', '[X]')) as { content: { input?: unknown }[] };
    expect(out.content[2]!.input).toEqual({ token: '[X]' });
  });
});
