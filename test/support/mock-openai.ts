/**
 * A mock OpenAI-wire provider: a real HTTP server that speaks the chat completions format (JSON and
 * SSE), records what it received, and can be told per request to fail, delay or hold chunks.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What to answer next; the default is a successful completion. */
export type Behaviour =
  | { kind: 'ok'; answerModel?: string }
  | { kind: 'error'; status: number; body: string; contentType?: string; headers?: Record<string, string> }
  | { kind: 'delay'; ms: number }
  /** Answers (a completion) only once `until` resolves: a request kept in flight for as long as a test needs. */
  | { kind: 'hold'; until: Promise<void> }
  | {
      kind: 'stream';
      chunks: string[];
      holdAfterFirst?: Promise<void>;
      usage?: boolean;
      /** Every content chunk carries the usage so far (vLLM's continuous usage stats). */
      runningUsage?: boolean;
    };

export interface MockOpenAI {
  url: string;
  received: Received[];
  /** Behaviours consumed one per request, in order; then `ok`. */
  queue: Behaviour[];
  close(): Promise<void>;
}

export function completion(model: string, content: string) {
  return {
    id: 'chatcmpl-mock',
    object: 'chat.completion',
    created: 1_750_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
  };
}

function chunk(model: string, delta: Record<string, unknown>, finish: string | null) {
  return { id: 'chatcmpl-mock', object: 'chat.completion.chunk', created: 1_750_000_000, model, choices: [{ index: 0, delta, finish_reason: finish }] };
}

/** What `GET /models` lists. */
export const MOCK_MODELS = ['mock-model-a', 'mock-model-b'] as const;

/** The Responses API's usage names: input and output tokens. */
export const RESPONSE_USAGE = { input_tokens: 1000, output_tokens: 500, total_tokens: 1500 } as const;

function responseObject(model: string) {
  return {
    id: 'resp_mock',
    object: 'response',
    created_at: 1_750_000_000,
    status: 'completed',
    model,
    output: [{ type: 'message', id: 'msg_mock', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello', annotations: [] }] }],
    usage: RESPONSE_USAGE,
  };
}

/** `POST /responses`: a response object, or its stream of events ending in `response.completed`. */
function answerResponse(res: http.ServerResponse, model: string, stream: boolean): void {
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(responseObject(model)));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const { usage: _usage, ...created } = responseObject(model);
  res.write(`event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { ...created, status: 'in_progress', output: [] } })}\n\n`);
  res.write(`event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', delta: 'Hello' })}\n\n`);
  res.end(`event: response.completed\ndata: ${JSON.stringify({ type: 'response.completed', response: responseObject(model) })}\n\n`);
}

export async function startMockOpenAI(): Promise<MockOpenAI> {
  const received: Received[] = [];
  const queue: Behaviour[] = [];
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) parts.push(c);
    const body = Buffer.concat(parts).toString('utf8');
    received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    const behaviour = queue.shift() ?? { kind: 'ok' };
    let parsed: { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } } = {};
    try {
      // A body that is JSON but not an object (null, a number) answers as one without fields.
      parsed = Object(JSON.parse(body)) as typeof parsed;
    } catch {
      // not JSON: answer anyway
    }
    const model = parsed.model ?? 'mock-model';

    if (req.url?.endsWith('/embeddings')) {
      // A deterministic embedding: letter frequencies, so texts differing only in case or
      // punctuation are identical and unrelated texts are far apart.
      const input = String((parsed as { input?: unknown }).input ?? '').toLowerCase();
      const vector = Array.from({ length: 26 }, (_, i) => [...input].filter((ch) => ch.charCodeAt(0) === 97 + i).length);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: vector }], model, usage: { prompt_tokens: 1, total_tokens: 1 } }),
      );
      return;
    }

    if (req.method === 'GET' && req.url?.endsWith('/models') && behaviour.kind === 'ok') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: MOCK_MODELS.map((id) => ({ id, object: 'model', created: 1_750_000_000, owned_by: 'mock' })) }));
      return;
    }
    if (req.url?.endsWith('/responses') && behaviour.kind === 'ok') {
      answerResponse(res, model, parsed.stream === true);
      return;
    }

    if (behaviour.kind === 'error') {
      res.writeHead(behaviour.status, { 'content-type': behaviour.contentType ?? 'application/json', ...behaviour.headers });
      res.end(behaviour.body);
      return;
    }
    if (behaviour.kind === 'delay') await new Promise((r) => setTimeout(r, behaviour.ms));
    if (behaviour.kind === 'hold') await behaviour.until;
    if (res.destroyed) return;

    if (behaviour.kind === 'stream' || parsed.stream) {
      const words = behaviour.kind === 'stream' ? behaviour.chunks : ['Hello', ' there'];
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': 'req-mock' });
      const send = (obj: unknown) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
      send(chunk(model, { role: 'assistant', content: '' }, null));
      for (const [i, w] of words.entries()) {
        const running = behaviour.kind === 'stream' && behaviour.runningUsage;
        send({ ...chunk(model, { content: w }, null), ...(running ? { usage: { prompt_tokens: 9, completion_tokens: i + 1, total_tokens: 10 + i } } : {}) });
        if (i === 0 && behaviour.kind === 'stream' && behaviour.holdAfterFirst) await behaviour.holdAfterFirst;
      }
      send(chunk(model, {}, 'stop'));
      if (parsed.stream_options?.include_usage) {
        res.write(
          `data: ${JSON.stringify({ ...chunk(model, {}, null), choices: [], usage: { prompt_tokens: 9, completion_tokens: words.length, total_tokens: 9 + words.length } })}\n\n`,
        );
      }
      res.end('data: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req-mock' });
    res.end(JSON.stringify(completion((behaviour.kind === 'ok' && behaviour.answerModel) || model, 'Hello from the mock')));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    queue,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
