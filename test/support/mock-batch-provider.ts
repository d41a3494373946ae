/**
 * A mock OpenAI-wire provider for batch runs: a real HTTP server answering chat completions after
 * `delayMs`, with 429 above `maxConcurrent` requests in flight, a gate that holds answers (to catch
 * a batch mid-run), and a count of calls per message content (a batch test puts each line's
 * custom_id there), so a line called twice is seen.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface MockBatchProvider {
  url: string;
  /** Calls per message content (answered or refused). */
  calls: Map<string, number>;
  /** Answers given with status 429. */
  throttled: number;
  /** The most requests in flight at once (429s excluded). */
  peak: number;
  /** While set, answers wait for it. */
  gate: Promise<void> | undefined;
  /** Resolves once this many requests are held at the gate at the same time. */
  held(n: number): Promise<void>;
  close(): Promise<void>;
}

/** Each answer's usage, with the details OpenAI's answers carry (cached input, reasoning output). */
export const USAGE = {
  prompt_tokens: 9,
  completion_tokens: 3,
  total_tokens: 12,
  prompt_tokens_details: { cached_tokens: 4 },
  completion_tokens_details: { reasoning_tokens: 1 },
} as const;

export async function startMockBatchProvider(opts: { delayMs?: number; maxConcurrent?: number } = {}): Promise<MockBatchProvider> {
  let inflight = 0;
  let atGate = 0;
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const mock: MockBatchProvider = {
    url: '',
    calls: new Map(),
    throttled: 0,
    peak: 0,
    gate: undefined,
    held: (n) => new Promise<void>((resolve) => (atGate >= n ? resolve() : waiters.push({ n, resolve }))),
    close: () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())),
  };
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) parts.push(c);
    let body: { model?: string; messages?: Array<{ content: string }> } = {};
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8')) as typeof body;
    } catch {
      // not a chat request: answered as one anyway
    }
    const content = String(body.messages?.[0]?.content ?? '');
    mock.calls.set(content, (mock.calls.get(content) ?? 0) + 1);
    if (opts.maxConcurrent !== undefined && inflight >= opts.maxConcurrent) {
      mock.throttled++;
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } }));
      return;
    }
    inflight++;
    mock.peak = Math.max(mock.peak, inflight);
    try {
      if (mock.gate) {
        atGate++;
        for (const w of waiters.filter((x) => atGate >= x.n)) waiters.splice(waiters.indexOf(w), 1), w.resolve();
        await mock.gate;
        atGate--;
      }
      if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
    } finally {
      inflight--;
    }
    if (res.destroyed) return;
    if (body.model === 'no-such-model') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { message: `The model ${body.model} does not exist`, type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${content}`,
        object: 'chat.completion',
        created: 1_750_000_000,
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: `echo ${content}` }, logprobs: null, finish_reason: 'stop' }],
        usage: USAGE,
      }),
    );
  });
  // Longer than the gateway's idle connections live: a socket closed as a line is sent on it is an ECONNRESET (502).
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  mock.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return mock;
}
