/**
 * POST /v1/chat/completions end to end: the official openai SDK against the local server (direct
 * and through the real Lambda handlers) in front of a mock OpenAI-wire provider.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../support/gantry.ts';

describe.each(['direct', 'lambda'] as const)('chat completions (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;
  let client: OpenAI;

  const clientWith = (headers: Record<string, string | null>) =>
    new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'sk-provider-secret',
      maxRetries: 0,
      defaultHeaders: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, ...headers },
    });

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAI()]);
    key = await gw.workspaceKey();
    client = clientWith({});
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  it('returns the provider completion and sends it only what it needs', async () => {
    const res = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], temperature: 0.2 }).withResponse();
    expect(res.data.choices[0]?.message.content).toBe('Hello from the mock');
    expect(res.data.usage?.total_tokens).toBe(12);
    expect(res.response.headers.get('x-gw-provider')).toBe('openai');
    expect(res.response.headers.get('x-gw-trace-id')).toMatch(/^[0-9a-f-]{36}$/);

    expect(mock.received).toHaveLength(1);
    const got = mock.received[0]!;
    expect(got.path).toBe('/v1/chat/completions');
    expect(got.headers.authorization).toBe('Bearer sk-provider-secret');
    expect(Object.keys(got.headers).filter((h) => h.startsWith('x-gw-'))).toEqual([]);
    expect(JSON.stringify(got.headers)).not.toContain(key);
    expect(JSON.parse(got.body)).toEqual({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], temperature: 0.2 });
  });

  it('passes unknown fields through to the provider untouched', async () => {
    await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Hi', cache_hint: 'x' } as OpenAI.ChatCompletionMessageParam],
      // @ts-expect-error: a provider-specific field the SDK does not know
      top_k: 40,
    });
    const body = JSON.parse(mock.received[0]!.body) as Record<string, unknown>;
    expect(body.top_k).toBe(40);
    expect((body.messages as Array<Record<string, unknown>>)[0]?.cache_hint).toBe('x');
  });

  it('echoes a trace id the client sends', async () => {
    const res = await clientWith({ 'x-gw-trace-id': 'trace-abc-123' })
      .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    expect(res.response.headers.get('x-gw-trace-id')).toBe('trace-abc-123');
  });

  it('streams chunks as they arrive, ending with [DONE] and usage', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    mock.queue.push({ kind: 'stream', chunks: ['One', ' two', ' three'], holdAfterFirst: held });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Count' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const c of stream) {
      const text = c.choices[0]?.delta.content;
      if (text) pieces.push(text);
      // The provider holds the rest until the first word has reached us: a buffering gateway would hang here.
      if (text === 'One') release();
      finish ??= c.choices[0]?.finish_reason;
      if (c.usage) usage = c.usage;
    }
    expect(pieces.join('')).toBe('One two three');
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(3);
  });

  it('ends the raw SSE stream with data: [DONE]', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
  });

  describe('refusals', () => {
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, 'content-type': 'application/json', ...headers },
        body,
      });
    const valid = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }] });

    it('401 without a gateway key, in OpenAI shape', async () => {
      const res = await post({}, valid);
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('authentication_error');
      expect(body.error.message).toContain('x-gw-api-key');
    });

    it('401 with a wrong key', async () => {
      await expect(
        clientWith({ 'x-gw-api-key': 'gw_wrong' }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      ).rejects.toMatchObject({ status: 401 });
    });

    it('403 for a workspace key without completions.write, and for an organisation key', async () => {
      const readOnly = await gw.workspaceKey(['api_keys.list']);
      const a = await post({ 'x-gw-api-key': readOnly }, valid);
      expect(a.status).toBe(403);
      expect(((await a.json()) as { error: { message: string } }).error.message).toContain('completions.write');
      const b = await post({ 'x-gw-api-key': ADMIN_KEY }, valid);
      expect(b.status).toBe(403);
      expect(mock.received).toHaveLength(0);
    });

    it('400 for malformed JSON, never a 500', async () => {
      const res = await post({ 'x-gw-api-key': key }, '{"model": "m", "messages": [');
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    });

    it.each([
      [{ temperature: 3 }, 'temperature'],
      [{ top_p: -0.1 }, 'top_p'],
      [{ n: 0 }, 'n'],
      [{ stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
      [{ top_logprobs: 2 }, 'top_logprobs'],
      [{ stream_options: { include_usage: true } }, 'stream_options'],
      [{ messages: [] }, 'messages'],
      [{ presence_penalty: 2.5 }, 'presence_penalty'],
      [{ logit_bias: { '50256': 101 } }, 'logit_bias.50256'],
    ])('400 naming the field for %j', async (patch, param) => {
      const err = await client.chat.completions
        .create({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], ...(patch as object) } as OpenAI.ChatCompletionCreateParamsNonStreaming)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe(param);
      expect(mock.received).toHaveLength(0);
    });

    it('400 for more than 128 tools', async () => {
      const tools = Array.from({ length: 129 }, (_, i) => ({ type: 'function' as const, function: { name: `f${i}` } }));
      const err = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], tools }).catch((e: unknown) => e);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools');
    });

    it('400 for an unknown provider and for a missing one', async () => {
      const a = await post({ 'x-gw-api-key': key, 'x-gw-provider': 'nope' }, valid);
      expect(a.status).toBe(400);
      expect(((await a.json()) as { error: { param: string } }).error.param).toBe('x-gw-provider');
      const res = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'x-gw-api-key': key }, body: valid });
      expect(res.status).toBe(400);
    });

    it.each(['http://169.254.169.254/latest', 'http://10.0.0.8/v1', 'file:///etc/passwd', 'http://user:pw@example.com/v1'])(
      '400 for the blocked custom host %s',
      async (host) => {
        const res = await post({ 'x-gw-api-key': key, 'x-gw-custom-host': host }, valid);
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: { param: string } }).error.param).toBe('x-gw-custom-host');
      },
    );
  });

  describe('provider failures', () => {
    it('passes a provider error through with its status and body', async () => {
      const body = { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } };
      mock.queue.push({ kind: 'error', status: 429, body: JSON.stringify(body), headers: { 'retry-after': '7' } });
      const err = (await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)) as InstanceType<
        typeof OpenAI.APIError
      >;
      expect(err.status).toBe(429);
      expect(err.message).toContain('Rate limit reached');
      expect(err.headers?.get('retry-after')).toBe('7');
    });

    it('wraps a non-JSON provider error into an OpenAI error with the same status', async () => {
      mock.queue.push({ kind: 'error', status: 502, body: '<html><body><h1>Bad Gateway</h1></body></html>', contentType: 'text/html' });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      });
      expect(res.status).toBe(502);
      const json = (await res.json()) as { error: { message: string; type: string } };
      expect(json.error.message).toContain('Bad Gateway');
      expect(json.error.type).toBe('api_error');
    });

    it('answers 408 when the provider is slower than x-gw-request-timeout', async () => {
      mock.queue.push({ kind: 'delay', ms: 1_000 });
      const err = (await clientWith({ 'x-gw-request-timeout': '100' })
        .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(err.status).toBe(408);
      expect((err.error as { type: string }).type).toBe('timeout_error');
    });

    it('rejects a malformed x-gw-request-timeout', async () => {
      const err = (await clientWith({ 'x-gw-request-timeout': 'soon' })
        .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(err.status).toBe(400);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('x-gw-request-timeout');
    });

    it('answers 502 when the provider cannot be reached', async () => {
      const err = (await clientWith({ 'x-gw-custom-host': 'http://127.0.0.1:1/v1' })
        .chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(err.status).toBe(502);
    });
  });
});
