/**
 * Providers that misbehave mid-answer: a body shorter than its Content-Length (connection closed,
 * or kept open), an SSE stream that stops, a passthrough body that stalls. The client always gets
 * an answer it can act on within the idle timeout (a 502 naming the cause, or an SSE error event
 * the openai SDK raises), never a 500 or a hang, and the record says what happened.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayRecord } from '../../layers/core/src/gateway/lifecycle.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';

type Behaviour = (res: http.ServerResponse) => void;

const CHUNK = (content: string) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content } }] })}\n\n`;

/** A provider whose every answer follows the behaviour queued for the path's last segment. */
async function startFaultyProvider(behaviours: Record<string, Behaviour>) {
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    req.resume();
    open.add(res);
    res.on('close', () => open.delete(res));
    const mode = req.headers['x-fault'] as string;
    (behaviours[mode] ?? ((r) => r.end()))(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: async () => {
      for (const res of open) res.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const behaviours: Record<string, Behaviour> = {
  // Fewer bytes than the Content-Length, then the connection closes.
  'short-close': (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '400' });
    res.write('{"id":"x","object":"chat.completion","choices":[');
    setTimeout(() => res.socket?.destroy(), 20);
  },
  // Fewer bytes than the Content-Length, then nothing: the connection stays open.
  'short-stall': (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '400' });
    res.write('{"id":"x","object":"chat.completion","choices":[');
  },
  // Two chunks of a stream, then silence.
  'sse-stall': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(CHUNK('Hel'));
    res.write(CHUNK('lo'));
  },
  // Two chunks of a stream, then the connection drops.
  'sse-drop': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(CHUNK('Hel'));
    setTimeout(() => res.socket?.destroy(), 20);
  },
};

describe.each(['direct', 'lambda'] as const)('provider faults (%s mode)', (mode) => {
  let gw: TestGantry;
  let provider: Awaited<ReturnType<typeof startFaultyProvider>>;
  let key: string;
  const records: GatewayRecord[] = [];

  const client = (fault: string) =>
    new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'sk-provider',
      maxRetries: 0,
      timeout: 20_000,
      defaultHeaders: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${provider.url}/v1`,
        'x-gw-forward-headers': 'x-fault',
        'x-fault': fault,
      },
    });

  /** The record of the request with this trace id, once the hooks completed it. */
  async function recordOf(traceId: string | null): Promise<GatewayRecord> {
    for (let i = 0; i < 100; i++) {
      const found = records.find((r) => r.traceId === traceId);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no record for ${traceId}`);
  }

  beforeAll(async () => {
    [gw, provider] = await Promise.all([startGantry(mode, { GW_UPSTREAM_IDLE_TIMEOUT_SECONDS: '1' }), startFaultyProvider(behaviours)]);
    gw.deps.gatewayHooks.push({ name: 'test-recorder', complete: (r) => void records.push(r) });
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), provider?.close()]);
  });

  it.each(['short-close', 'short-stall'])('answers 502 naming the cause when a JSON answer breaks off (%s)', async (fault) => {
    const err = await client(fault)
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const apiErr = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiErr.status).toBe(502);
    expect(apiErr.message).toMatch(fault === 'short-stall' ? /sent nothing for 1 s/ : /closed the connection before its answer was complete/);
    const record = await recordOf(apiErr.headers?.get('x-gw-trace-id') ?? null);
    expect(record.status).toBe(502);
    expect(record.errorMessage).toBe(apiErr.error && (apiErr.error as { message: string }).message);
  });

  it.each(['sse-stall', 'sse-drop'])('ends a cut stream with an error event the openai SDK raises (%s)', async (fault) => {
    const { data: stream, response } = await client(fault)
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true })
      .withResponse();
    const got: string[] = [];
    const err = await (async () => {
      for await (const chunk of stream) got.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((e: unknown) => e);
    expect(got.join('')).toBe(fault === 'sse-stall' ? 'Hello' : 'Hel');
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toMatch(/sent nothing for 1 s|closed the connection before its answer was complete/);
    const record = await recordOf(response.headers.get('x-gw-trace-id'));
    expect(record.errorCode).toBe('upstream_stream_interrupted');
    expect(record.streamText).toContain('Hel');
  });

  it('ends a passthrough answer that stalls instead of leaving the client waiting', async () => {
    const res = await fetch(`${gw.url}/v1/some/provider/path`, {
      headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': provider.url, 'x-fault': 'short-stall', authorization: 'Bearer sk-p' },
      signal: AbortSignal.timeout(15_000),
    });
    expect(res.status).toBe(200);
    // The gateway ends the body, cut short, once the provider has been silent for the idle timeout
    // (directly: the connection is closed mid-body; through Lambda: the response stream ends), never
    // on the client's own timeout.
    const outcome = await res.text().then(
      (text) => ({ text, error: undefined as Error | undefined }),
      (error: unknown) => ({ text: '', error: error as Error }),
    );
    expect(outcome.error?.name ?? 'none').not.toMatch(/TimeoutError|AbortError/);
    if (mode === 'direct') expect(outcome.error).toBeInstanceOf(Error);
    expect(outcome.text.length).toBeLessThan(400);
  });
});
