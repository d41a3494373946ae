/** Assembling a streamed answer for the log. */
import { describe, expect, it } from 'vitest';
import { assembleStream } from '../../../../layers/core/src/observability/stream-log.ts';

const sse = (...events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices,
  ...extra,
});

describe('assembleStream', () => {
  it('joins the text of each choice and keeps finish reasons and usage', () => {
    const text = sse(
      chunk([
        { index: 0, delta: { role: 'assistant', content: '' } },
        { index: 1, delta: { role: 'assistant', content: 'B' } },
      ]),
      chunk([{ index: 0, delta: { content: 'Hel' } }]),
      chunk([
        { index: 0, delta: { content: 'lo' }, finish_reason: 'stop' },
        { index: 1, delta: {}, finish_reason: 'length' },
      ]),
      chunk([], { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }),
    );
    expect(assembleStream(text)).toEqual({
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      stream: true,
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' },
        { index: 1, message: { role: 'assistant', content: 'B' }, finish_reason: 'length' },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });
  });

  it('rebuilds tool calls from their argument fragments', () => {
    const text = sse(
      chunk([
        {
          index: 0,
          delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
        },
      ]),
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] } }]),
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, finish_reason: 'tool_calls' }]),
    );
    const out = assembleStream(text) as { choices: Array<{ message: { tool_calls: unknown[] }; finish_reason: string }> };
    expect(out.choices[0]?.message.tool_calls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }]);
    expect(out.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('keeps a truncated stream up to its last whole event, and other stream shapes as events', () => {
    const cut = sse(chunk([{ index: 0, delta: { content: 'Hi' } }])).replace('data: [DONE]\n\n', '') + 'data: {"id":"c1","obj';
    expect((assembleStream(cut) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message.content).toBe('Hi');
    expect(assembleStream(sse({ type: 'response.output_text.delta', delta: 'x' }))).toEqual({
      stream: true,
      events: [{ type: 'response.output_text.delta', delta: 'x' }],
    });
  });
});
