/**
 * The bench's provider: a lean OpenAI-wire server run as a child process. Answers are fixed and
 * pre-encoded so the mock costs as little as possible and the same for every caller. Streams send
 * the first chunk at once and the rest after BENCH_STREAM_GAP_MS, so a gateway that buffers
 * instead of forwarding shows up in the first-chunk time.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReadyMessage } from './protocol.ts';

const GAP_MS = Number(process.env.BENCH_STREAM_GAP_MS ?? 5);

const COMPLETION = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1_750_000_000,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the bench mock' }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 },
  }),
);

const sse = (delta: Record<string, unknown>, finish: string | null): string =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_750_000_000, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

const FIRST_CHUNK = Buffer.from(sse({ role: 'assistant', content: '' }, null));
const REST = Buffer.from(sse({ content: 'Hello' }, null) + sse({ content: ' there' }, null) + sse({}, 'stop') + 'data: [DONE]\n\n');

const JSON_HEADERS = { 'content-type': 'application/json', 'content-length': String(COMPLETION.length), 'x-request-id': 'req-bench' };
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': 'req-bench' };

const server = http.createServer((req, res) => {
  // The bench writes its bodies compactly, so a substring test is enough to tell a stream request.
  let stream = false;
  req.on('data', (c: Buffer) => {
    if (!stream && c.includes('"stream":true')) stream = true;
  });
  req.on('end', () => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    if (!stream) {
      res.writeHead(200, JSON_HEADERS).end(COMPLETION);
      return;
    }
    res.writeHead(200, SSE_HEADERS);
    res.write(FIRST_CHUNK);
    setTimeout(() => res.end(REST), GAP_MS);
  });
});
server.keepAliveTimeout = 65_000;

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  const ready: ReadyMessage = { type: 'ready', url: `http://127.0.0.1:${port}` };
  process.send?.(ready);
});

// The bench is gone (or done): stop with it.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
