/** A mock Cohere v2 API (chat JSON and SSE events, embed, rerank), from docs.cohere.com/reference. */
import { sseEvent, startMockServer, type MockServer } from './mock-http.ts';
import { TEXT_ANSWER, TOOL_ANSWER } from './native-fixtures.ts';

export const COHERE_MODEL = 'command-a-03-2025';
export const COHERE_KEY = 'co-test-key';

const usage = (prompt: number, completion: number) => ({
  billed_units: { input_tokens: prompt - 6, output_tokens: completion },
  tokens: { input_tokens: prompt, output_tokens: completion },
});

export function textChat(): Record<string, unknown> {
  return {
    id: 'c14c80c3-18eb-4519-9460-6c92edd8cfb4',
    finish_reason: 'COMPLETE',
    message: { role: 'assistant', content: [{ type: 'text', text: TEXT_ANSWER.text }] },
    usage: usage(TEXT_ANSWER.prompt, TEXT_ANSWER.completion),
  };
}

export function toolChat(): Record<string, unknown> {
  return {
    id: 'a1d4a3e8-1bd4-4c2b-8b4a-0d4a9c7d2d11',
    finish_reason: 'TOOL_CALL',
    message: {
      role: 'assistant',
      tool_plan: 'I will look up the weather in Rome and Milan.',
      tool_calls: TOOL_ANSWER.calls.map((c, i) => ({
        id: `get_weather_${i}byjy32y4hvq`,
        type: 'function',
        function: { name: c.name, arguments: c.arguments },
      })),
    },
    usage: usage(TOOL_ANSWER.prompt, TOOL_ANSWER.completion),
  };
}

const start = (id: string) =>
  sseEvent(
    { id, type: 'message-start', delta: { message: { role: 'assistant', content: [], tool_plan: '', tool_calls: [], citations: [] } } },
    'message-start',
  );

export function textEvents(): string[] {
  return [
    start('29f14a5a-11de-4cae-9800-25e4747408ea'),
    sseEvent({ type: 'content-start', index: 0, delta: { message: { content: { type: 'text', text: '' } } } }, 'content-start'),
    ...TEXT_ANSWER.pieces.map((text) => sseEvent({ type: 'content-delta', index: 0, delta: { message: { content: { text } } } }, 'content-delta')),
    sseEvent({ type: 'content-end', index: 0 }, 'content-end'),
    sseEvent({ type: 'message-end', delta: { finish_reason: 'COMPLETE', usage: usage(TEXT_ANSWER.prompt, TEXT_ANSWER.completion) } }, 'message-end'),
  ];
}

export function toolEvents(): string[] {
  const out = [
    start('4d2a7c9e-2bd0-4d0f-9b3e-8f8c2a6e1f00'),
    sseEvent({ type: 'tool-plan-delta', delta: { message: { tool_plan: 'I will look up ' } } }, 'tool-plan-delta'),
    sseEvent({ type: 'tool-plan-delta', delta: { message: { tool_plan: 'the weather.' } } }, 'tool-plan-delta'),
  ];
  TOOL_ANSWER.calls.forEach((c, index) => {
    out.push(
      sseEvent(
        {
          type: 'tool-call-start',
          index,
          delta: { message: { tool_calls: { id: `get_weather_s${index}`, type: 'function', function: { name: c.name, arguments: '' } } } },
        },
        'tool-call-start',
      ),
    );
    for (const p of c.pieces)
      out.push(sseEvent({ type: 'tool-call-delta', index, delta: { message: { tool_calls: { function: { arguments: p } } } } }, 'tool-call-delta'));
    out.push(sseEvent({ type: 'tool-call-end', index }, 'tool-call-end'));
  });
  out.push(sseEvent({ type: 'message-end', delta: { finish_reason: 'TOOL_CALL', usage: usage(TOOL_ANSWER.prompt, TOOL_ANSWER.completion) } }, 'message-end'));
  return out;
}

export function startMockCohere(): Promise<MockServer> {
  return startMockServer((req) => {
    if (req.headers.authorization !== `Bearer ${COHERE_KEY}`) return { status: 401, json: { id: 'e1', message: 'invalid api token' } };
    const body = (req.json ?? {}) as Record<string, any>;
    if (req.path === '/v2/embed') {
      return {
        json: {
          id: 'emb',
          embeddings: { float: (body.texts as string[]).map((_, i) => [i, 0.1]) },
          texts: body.texts,
          meta: { api_version: { version: '2' }, billed_units: { input_tokens: 6 } },
          response_type: 'embeddings_by_type',
        },
      };
    }
    if (req.path === '/v2/rerank') {
      return {
        json: {
          id: 'rr-1',
          results: [
            { index: 1, relevance_score: 0.98 },
            { index: 0, relevance_score: 0.05 },
          ].slice(0, body.top_n ?? 2),
          meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } },
        },
      };
    }
    const wantsTools = (body.tools ?? []).length > 0 && JSON.stringify(body.messages?.at(-1) ?? '').includes('Rome');
    if (body.stream) return { chunks: wantsTools ? toolEvents() : textEvents() };
    return { json: wantsTools ? toolChat() : textChat() };
  });
}
