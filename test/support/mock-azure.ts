/**
 * A mock Azure OpenAI resource: OpenAI's wire format under deployment paths (api-version in the
 * query) and the v1 path, `api-key` or Entra bearer auth, Azure's first stream chunk with
 * prompt_filter_results, and its content-filter error.
 */
import { startMockServer, type MockServer } from './mock-http.ts';
import { TEXT_ANSWER, TOOL_ANSWER } from './native-fixtures.ts';

export const AZURE_KEY = 'azure-test-key';
export const ENTRA_TOKEN = 'eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra';

const FILTER = {
  hate: { filtered: false, severity: 'safe' },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
};

export function azureCompletion(tools: boolean): Record<string, unknown> {
  return {
    id: 'chatcmpl-AZ1',
    object: 'chat.completion',
    created: 1_760_000_000,
    model: 'gpt-4o-2024-11-20',
    prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTER }],
    choices: [
      {
        index: 0,
        finish_reason: tools ? 'tool_calls' : 'stop',
        logprobs: null,
        content_filter_results: FILTER,
        message: tools
          ? {
              role: 'assistant',
              content: null,
              refusal: null,
              tool_calls: TOOL_ANSWER.calls.map((c, i) => ({ id: `call_az${i}`, type: 'function', function: { name: c.name, arguments: c.arguments } })),
            }
          : { role: 'assistant', content: TEXT_ANSWER.text, refusal: null },
      },
    ],
    usage: tools
      ? { prompt_tokens: TOOL_ANSWER.prompt, completion_tokens: TOOL_ANSWER.completion, total_tokens: 42 }
      : { prompt_tokens: TEXT_ANSWER.prompt, completion_tokens: TEXT_ANSWER.completion, total_tokens: 28 },
    system_fingerprint: 'fp_b705f0c291',
  };
}

const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-AZs', object: 'chat.completion.chunk', created: 1_760_000_000, model: 'gpt-4o-2024-11-20', system_fingerprint: 'fp_b705f0c291', choices, ...extra })}\n\n`;

export function azureStream(tools: boolean, includeUsage: boolean): string[] {
  const out = [
    `data: ${JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: [{ prompt_index: 0, content_filter_results: FILTER }] })}\n\n`,
  ];
  out.push(chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, finish_reason: null }]));
  if (tools) {
    TOOL_ANSWER.calls.forEach((c, i) => {
      out.push(
        chunk([
          {
            index: 0,
            delta: { tool_calls: [{ index: i, id: `call_azs${i}`, type: 'function', function: { name: c.name, arguments: '' } }] },
            finish_reason: null,
          },
        ]),
      );
      for (const p of c.pieces) out.push(chunk([{ index: 0, delta: { tool_calls: [{ index: i, function: { arguments: p } }] }, finish_reason: null }]));
    });
  } else {
    for (const p of TEXT_ANSWER.pieces) out.push(chunk([{ index: 0, delta: { content: p }, finish_reason: null }]));
  }
  out.push(chunk([{ index: 0, delta: {}, finish_reason: tools ? 'tool_calls' : 'stop', content_filter_results: {} }]));
  if (includeUsage) {
    const u = tools
      ? { prompt_tokens: TOOL_ANSWER.prompt, completion_tokens: TOOL_ANSWER.completion, total_tokens: 42 }
      : { prompt_tokens: TEXT_ANSWER.prompt, completion_tokens: TEXT_ANSWER.completion, total_tokens: 28 };
    out.push(chunk([], { usage: u }));
  }
  out.push('data: [DONE]\n\n');
  return out;
}

export const contentFilterError = {
  error: {
    message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
    type: null,
    param: 'prompt',
    code: 'content_filter',
    status: 400,
    innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { ...FILTER, violence: { filtered: true, severity: 'high' } } },
  },
};

export function startMockAzure(): Promise<MockServer> {
  return startMockServer((req) => {
    const keyOk = req.headers['api-key'] === AZURE_KEY || req.headers.authorization === `Bearer ${ENTRA_TOKEN}`;
    if (!keyOk) return { status: 401, json: { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } } };
    const body = (req.json ?? {}) as Record<string, any>;
    if (req.path.split('?')[0]!.endsWith('/embeddings')) {
      const inputs: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
      const vector = (index: number) =>
        body.encoding_format === 'base64' ? Buffer.from(new Float32Array([index, 0.5, -0.5]).buffer).toString('base64') : [index, 0.5, -0.5];
      return {
        json: {
          object: 'list',
          data: inputs.map((_, index) => ({ object: 'embedding', index, embedding: vector(index) })),
          model: 'text-embedding-3-small',
          usage: { prompt_tokens: 4, total_tokens: 4 },
        },
      };
    }
    if (JSON.stringify(body.messages ?? '').includes('violent')) return { status: 400, json: contentFilterError };
    const tools = (body.tools ?? []).length > 0 && JSON.stringify(body.messages?.at(-1) ?? '').includes('Rome');
    if (body.stream) return { chunks: azureStream(tools, body.stream_options?.include_usage === true) };
    return { json: azureCompletion(tools) };
  });
}
