/**
 * A mock Anthropic Messages API (https://docs.anthropic.com/en/api/messages): JSON messages and
 * SSE streams (message_start, content_block_*, message_delta, message_stop, ping, error) rendering
 * the canonical answers of native-fixtures.ts.
 */
import { sseEvent, startMockServer, type MockServer, type Reply } from './mock-http.ts';
import { TEXT_ANSWER, TOOL_ANSWER } from './native-fixtures.ts';

export const ANTHROPIC_MODEL = 'claude-sonnet-4-5-20250929';

export function textMessage(extraUsage: Record<string, number> = {}): Record<string, unknown> {
  return {
    id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    type: 'message',
    role: 'assistant',
    model: ANTHROPIC_MODEL,
    content: [{ type: 'text', text: TEXT_ANSWER.text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: TEXT_ANSWER.prompt,
      output_tokens: TEXT_ANSWER.completion,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      ...extraUsage,
    },
  };
}

export function toolMessage(): Record<string, unknown> {
  return {
    id: 'msg_01Aq9w938a90dw8q',
    type: 'message',
    role: 'assistant',
    model: ANTHROPIC_MODEL,
    content: TOOL_ANSWER.calls.map((c, i) => ({
      type: 'tool_use',
      id: `toolu_0${i + 1}A09q90qw90lq917835lq9`,
      name: c.name,
      input: JSON.parse(c.arguments) as unknown,
    })),
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: TOOL_ANSWER.prompt, output_tokens: TOOL_ANSWER.completion },
  };
}

const start = (id: string, input: number) =>
  sseEvent(
    {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        content: [],
        model: ANTHROPIC_MODEL,
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
      },
    },
    'message_start',
  );

export function textStream(): string[] {
  return [
    start('msg_stream_text', TEXT_ANSWER.prompt),
    sseEvent({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start'),
    sseEvent({ type: 'ping' }, 'ping'),
    ...TEXT_ANSWER.pieces.map((t) => sseEvent({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } }, 'content_block_delta')),
    sseEvent({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
    sseEvent(
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: TEXT_ANSWER.completion } },
      'message_delta',
    ),
    sseEvent({ type: 'message_stop' }, 'message_stop'),
  ];
}

export function toolStream(): string[] {
  const out = [start('msg_stream_tool', TOOL_ANSWER.prompt)];
  TOOL_ANSWER.calls.forEach((c, i) => {
    out.push(
      sseEvent(
        { type: 'content_block_start', index: i, content_block: { type: 'tool_use', id: `toolu_s${i}`, name: c.name, input: {} } },
        'content_block_start',
      ),
    );
    out.push(sseEvent({ type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: '' } }, 'content_block_delta'));
    for (const p of c.pieces)
      out.push(sseEvent({ type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: p } }, 'content_block_delta'));
    out.push(sseEvent({ type: 'content_block_stop', index: i }, 'content_block_stop'));
  });
  out.push(
    sseEvent(
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: TOOL_ANSWER.completion } },
      'message_delta',
    ),
  );
  out.push(sseEvent({ type: 'message_stop' }, 'message_stop'));
  return out;
}

export function thinkingStream(): string[] {
  return [
    start('msg_stream_think', 12),
    sseEvent({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }, 'content_block_start'),
    sseEvent({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Paris is in France. ' } }, 'content_block_delta'),
    sseEvent({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3h' } }, 'content_block_delta'),
    sseEvent({ type: 'content_block_stop', index: 0 }, 'content_block_stop'),
    sseEvent({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }, 'content_block_start'),
    sseEvent({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Paris.' } }, 'content_block_delta'),
    sseEvent({ type: 'content_block_stop', index: 1 }, 'content_block_stop'),
    sseEvent({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 40 } }, 'message_delta'),
    sseEvent({ type: 'message_stop' }, 'message_stop'),
  ];
}

export const anthropicErrorReply = (status: number, type: string, message: string): Reply => ({
  status,
  json: { type: 'error', error: { type, message }, request_id: 'req_011CSHoEeqs5C35K2UUqR7Fy' },
});

/** Answers text, or the tool answer when the request offers tools and the last turn is the user's; SSE when asked to stream. */
export function startMockAnthropic(): Promise<MockServer> {
  return startMockServer((req) => {
    const body = (req.json ?? {}) as { stream?: boolean; tools?: unknown[]; messages?: { role: string; content: unknown }[] };
    const last = body.messages?.at(-1);
    const wantsTools = Array.isArray(body.tools) && body.tools.length > 0 && last?.role === 'user' && JSON.stringify(last.content).includes('Rome');
    if (body.stream) return { chunks: wantsTools ? toolStream() : textStream() };
    return { json: wantsTools ? toolMessage() : textMessage() };
  });
}
