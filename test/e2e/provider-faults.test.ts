/**
 * Providers that misbehave mid-answer: a body shorter than its Content-Length (connection closed,
 * or kept open), an SSE stream that stops, a passthrough body that stalls. The client always gets
 * an answer it can act on within the idle timeout (a 502 naming the cause, or an SSE error event
 * the openai SDK raises), never a 500 or a hang, and the record says what happened.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';

type Behaviour = (res: http.ServerResponse) => void;

const CHUNK = (content: string) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content } }] })}\n\n`;

const ANTHROPIC_START = [
  [
    'message_start',
    {
      type: 'message_start',
      message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [], usage: { input_tokens: 1, output_tokens: 0 } },
    },
  ],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }],
]
  .map(([name, data]) => `event: ${name as string}\ndata: ${JSON.stringify(data)}\n\n`)
  .join('');

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
  // Anthropic's own stream, cut after its first text.
  'anthropic-drop': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': '4000' });
    res.write(ANTHROPIC_START);
    setTimeout(() => res.socket?.destroy(), 20);
  },
  // A stream that declares more bytes than it sends, then the connection closes.
  'sse-short-close': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': '4000' });
    res.write(CHUNK('Hel'));
    setTimeout(() => res.socket?.destroy(), 20);
  },
  // A stream that declares more bytes than it sends, then nothing: the connection stays open.
  'sse-short-stall': (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': '4000' });
    res.write(CHUNK('Hel'));
    res.write(CHUNK('lo'));
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

  it.each(['sse-stall', 'sse-drop', 'sse-short-close', 'sse-short-stall'])(
    'ends a cut stream with an error event the openai SDK raises (%s)',
    async (fault) => {
      const { data: stream, response } = await client(fault)
        .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true })
        .withResponse();
      const got: string[] = [];
      const err = await (async () => {
        for await (const chunk of stream) got.push(chunk.choices[0]?.delta.content ?? '');
      })().catch((e: unknown) => e);
      expect(got.join('')).toBe(fault.endsWith('stall') ? 'Hello' : 'Hel');
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as Error).message).toMatch(/sent nothing for 1 s|closed the connection before its answer was complete/);
      const record = await recordOf(response.headers.get('x-gw-trace-id'));
      expect(record.errorCode).toBe('upstream_stream_interrupted');
      expect(record.streamText).toContain('Hel');
    },
  );

  it.each(['sse-drop', 'sse-short-close', 'sse-short-stall'])('ends a cut stream with the chunked terminator, not a dropped connection (%s)', async (fault) => {
    const res = await rawExchange(
      `${gw.url}/v1/chat/completions`,
      'POST',
      {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${provider.url}/v1`,
        'x-gw-forward-headers': 'x-fault',
        'x-fault': fault,
        authorization: 'Bearer sk-provider',
        'content-type': 'application/json',
      },
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    );
    expect(res.status).toBe(200);
    expect(res.ending).toBe('clean');
    expect(res.body).toMatch(/data: \{"error":\{"message":"[^"]*(sent nothing|closed the connection)/);
  });

  it.each([
    ['an OpenAI target', 'openai', 'sse-drop'],
    ['an Anthropic target', 'anthropic', 'anthropic-drop'],
  ])('ends a cut stream on /v1/messages with an error event the Anthropic SDK raises (%s)', async (_name, target, fault) => {
    const anthropic = new Anthropic({
      baseURL: gw.url,
      apiKey: 'sk-provider-key',
      maxRetries: 0,
      timeout: 20_000,
      defaultHeaders: {
        'x-gw-api-key': key,
        'x-gw-provider': target,
        'x-gw-custom-host': `${provider.url}/v1`,
        'x-gw-forward-headers': 'x-fault',
        'x-fault': fault,
      },
    });
    const { data: stream, response } = await anthropic.messages
      .create({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }], stream: true })
      .withResponse();
    const got: string[] = [];
    const err = await (async () => {
      for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') got.push(event.delta.text);
    })().catch((e: unknown) => e);
    expect(got.join('')).toBe('Hel');
    expect(err).toBeInstanceOf(Anthropic.APIError);
    expect((err as Error).message).toMatch(/closed the connection before its answer was complete/);
    const record = await recordOf(response.headers.get('x-gw-trace-id'));
    expect(record.errorCode).toBe('upstream_stream_interrupted');
  });

  it('ends a passthrough stream the provider cut with an error event and the chunked terminator', async () => {
    const res = await rawExchange(
      `${gw.url}/v1/some/provider/stream`,
      'POST',
      {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': provider.url,
        'x-fault': 'sse-short-close',
        authorization: 'Bearer sk-provider',
        'content-type': 'application/json',
      },
      '{}',
    );
    expect(res.status).toBe(200);
    expect(res.ending).toBe('clean');
    expect(res.body.startsWith(CHUNK('Hel'))).toBe(true);
    expect(res.body.slice(CHUNK('Hel').length)).toMatch(
      /^event: error\ndata: \{"type":"error","error":\{"message":"The provider closed the connection before its answer was complete[^\n]*\n\n$/,
    );
    const record = await recordOf(String(res.headers['x-gw-trace-id']));
    expect(record.errorCode).toBe('upstream_stream_interrupted');
  });

  it.each(['short-close', 'short-stall'])('ends a passthrough answer the provider cut short with a clean end, and logs it (%s)', async (fault) => {
    const res = await rawExchange(`${gw.url}/v1/some/provider/path`, 'GET', {
      'x-gw-api-key': key,
      'x-gw-provider': 'openai',
      'x-gw-custom-host': provider.url,
      'x-fault': fault,
      authorization: 'Bearer sk-provider',
    });
    expect(res.status).toBe(200);
    // The provider's bytes as far as they came, then the end of a chunked body, never a connection
    // closed mid-body (nor one left waiting for the client's own timeout).
    expect(res.ending).toBe('clean');
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(res.body).toBe('{"id":"x","object":"chat.completion","choices":[');
    const record = await recordOf(String(res.headers['x-gw-trace-id']));
    expect(record.status).toBe(200);
    expect(record.errorCode).toBe('upstream_stream_interrupted');
    expect(record.errorMessage).toMatch(fault === 'short-stall' ? /sent nothing for 1 s/ : /closed the connection before its answer was complete/);
  });
});

/**
 * One request with node:http, and how its answer ended: `clean` (the whole body as framed, e.g.
 * the chunked terminator) or `dropped` (the connection closed mid-body).
 */
function rawExchange(url: string, method: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; ending: 'clean' | 'dropped' }>((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false, timeout: 15_000 }, (res) => {
      const chunks: Buffer[] = [];
      const settle = (ending: 'clean' | 'dropped') =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ending });
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => settle('clean'));
      res.once('error', () => settle('dropped'));
      res.once('aborted', () => settle('dropped'));
    });
    req.once('timeout', () => req.destroy(new Error('the client timed out')));
    req.once('error', reject);
    req.end(body);
  });
}
