/**
 * The inference endpoints beyond chat, end to end through the local server in both modes, with the
 * official openai SDK (plain HTTP for rerank and exact-byte checks): completions, embeddings,
 * images (a real PNG), audio (real binary speech, a real WAV), moderations and rerank. The mock
 * records what it received, so the tests also check what the provider got.
 */
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayHook, GatewayRecord } from '../../layers/core/src/kernel/lifecycle.ts';
import { sha256, speechBytes, startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { makePng, makeWav, multipart } from '../support/media.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { until } from '../support/until.ts';

describe.each(['direct', 'lambda'] as const)('inference endpoints (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAIApi;
  let key: string;
  let client: OpenAI;
  const records: GatewayRecord[] = [];
  const hook: GatewayHook = { name: 'recorder', complete: (r) => void records.push(r) };

  const gatewayHeaders = () => ({ 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1${path}`, {
      method: 'POST',
      headers: { ...gatewayHeaders(), authorization: 'Bearer sk-test', 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const last = () => mock.received.at(-1)!;
  const waitForRecord = (n = 1) => until(() => records[n - 1], `request record ${n}`);

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAIApi()]);
    key = await gw.workspaceKey();
    gw.deps.gatewayHooks.push(hook);
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: gatewayHeaders() });
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.reset();
    records.length = 0;
  });

  describe('completions', () => {
    it('returns a text completion and sends the body unchanged', async () => {
      const res = await client.completions
        .create({ model: 'gpt-3.5-turbo-instruct', prompt: 'Say hi', max_tokens: 0, best_of: 3, n: 2, logprobs: 5, echo: true, suffix: '.' })
        .withResponse();
      expect(res.data.object).toBe('text_completion');
      expect(res.data.choices).toHaveLength(2);
      expect(res.data.choices[0]?.text).toBe(' after "Say hi"');
      expect(res.response.headers.get('x-gw-provider')).toBe('openai');
      expect(last().path).toBe('/v1/completions');
      expect(JSON.parse(last().body.toString())).toEqual({
        model: 'gpt-3.5-turbo-instruct',
        prompt: 'Say hi',
        max_tokens: 0,
        best_of: 3,
        n: 2,
        logprobs: 5,
        echo: true,
        suffix: '.',
      });
      const r = await waitForRecord();
      expect(r).toMatchObject({ endpoint: 'complete', status: 200, model: 'gpt-3.5-turbo-instruct', usage: { total_tokens: 9 } });
    });

    it('streams text completion chunks with usage', async () => {
      const stream = await client.completions.create({ model: 'm', prompt: ['a', 'b'], stream: true, stream_options: { include_usage: true } });
      let text = '';
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const c of stream) {
        text += c.choices[0]?.text ?? '';
        if (c.usage) usage = c.usage;
      }
      expect(text).toBe(' Once upon a time');
      expect(usage?.total_tokens).toBe(7);
      expect((await waitForRecord()).stream).toBe(true);
    });
  });

  describe('embeddings', () => {
    it('embeds strings as floats, and as base64 the SDK decodes', async () => {
      const floats = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['one', 'two'], encoding_format: 'float', dimensions: 3 });
      expect(floats.data.map((d) => d.index)).toEqual([0, 1]);
      expect(floats.data[1]?.embedding).toEqual([2 / 2, 2 / 3, 2 / 4]);
      expect(JSON.parse(last().body.toString())).toEqual({ model: 'text-embedding-3-small', input: ['one', 'two'], encoding_format: 'float', dimensions: 3 });

      const decoded = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'one' });
      expect(JSON.parse(last().body.toString()).encoding_format).toBe('base64');
      expect(decoded.data[0]?.embedding.map((x) => Math.round(x * 1e6) / 1e6)).toEqual([0.5, 0.333333, 0.25, 0.2]);
    });

    it('takes token arrays', async () => {
      const res = await client.embeddings.create({ model: 'm', input: [[1, 2, 3], [4]], encoding_format: 'float' });
      expect(res.data).toHaveLength(2);
    });
  });

  describe('images', () => {
    it('generates images (JSON)', async () => {
      const res = await client.images.generate({ model: 'dall-e-3', prompt: 'a lighthouse', n: 1, size: '1024x1024', response_format: 'b64_json' });
      expect(Buffer.from(res.data![0]!.b64_json!, 'base64').toString()).toBe('png-0');
      expect(last().path).toBe('/v1/images/generations');
    });

    it('edits a real PNG sent as multipart, the file intact at the provider', async () => {
      const png = makePng(24, 12);
      const res = await client.images.edit({ model: 'gpt-image-1', image: await toFile(png, 'photo.png', { type: 'image/png' }), prompt: 'make it blue' });
      expect(Buffer.from(res.data![0]!.b64_json!, 'base64').toString()).toBe(`edited:${sha256(png)}`);
      const got = last();
      expect(got.path).toBe('/v1/images/edits');
      expect(got.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
      expect(got.form?.fields).toMatchObject({ prompt: 'make it blue', model: 'gpt-image-1' });
      expect(got.form?.files.image).toMatchObject({ name: 'photo.png', type: 'image/png', size: png.length });
      const r = await waitForRecord();
      expect(r).toMatchObject({ endpoint: 'imageEdit', model: 'gpt-image-1', request: { prompt: 'make it blue' } });
    });

    it('sends a variation request', async () => {
      const png = makePng();
      await client.images.createVariation({ image: await toFile(png, 'v.png', { type: 'image/png' }), n: 2 });
      expect(last().path).toBe('/v1/images/variations');
      expect(last().form?.files.image?.sha256).toBe(sha256(png));
    });
  });

  describe('audio', () => {
    it("relays speech as the provider's exact audio bytes and content type", async () => {
      const res = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'Hello there', response_format: 'mp3' });
      expect(res.headers.get('content-type')).toBe('audio/mpeg');
      expect(res.headers.get('x-gw-provider')).toBe('openai');
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(sha256(bytes)).toBe(sha256(speechBytes('Hello there')));
      const r = await waitForRecord();
      expect(r).toMatchObject({ endpoint: 'createSpeech', status: 200, responseBytes: bytes.length });
    });

    it('transcribes a real WAV file (SDK multipart)', async () => {
      const wav = makeWav();
      const res = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(wav, 'tone.wav', { type: 'audio/wav' }), language: 'en' });
      expect(res.text).toBe(`heard ${wav.length} bytes of tone.wav (${sha256(wav)})`);
      expect(last().form?.fields).toMatchObject({ model: 'whisper-1', language: 'en' });
    });

    it('passes a multipart body byte for byte, boundary included', async () => {
      const wav = makeWav(0.1);
      const { body, contentType } = multipart([
        { name: 'model', value: 'whisper-1' },
        { name: 'response_format', value: 'text' },
        { name: 'file', value: wav, filename: 'a.wav', type: 'audio/wav' },
      ]);
      const res = await fetch(`${gw.url}/v1/audio/translations`, {
        method: 'POST',
        headers: { ...gatewayHeaders(), authorization: 'Bearer sk-test', 'content-type': contentType },
        body,
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toBe(`heard ${wav.length} bytes of a.wav (${sha256(wav)})`);
      expect(last().headers['content-type']).toBe(contentType);
      expect(sha256(last().body)).toBe(sha256(body));
      expect(last().headers['content-length']).toBe(String(body.length));
    });
  });

  describe('moderations', () => {
    it('defaults the model to text-moderation-latest and returns the result', async () => {
      const res = await client.moderations.create({ input: 'I will kill the process' });
      expect(res.results[0]?.flagged).toBe(true);
      expect(res.results[0]?.categories.violence).toBe(true);
      expect(JSON.parse(last().body.toString())).toEqual({ input: 'I will kill the process', model: 'text-moderation-latest' });
      expect((await waitForRecord()).model).toBe('text-moderation-latest');
    });

    it('keeps an explicit allowed model and refuses others', async () => {
      await client.moderations.create({ input: ['a', 'b'], model: 'text-moderation-stable' });
      expect(JSON.parse(last().body.toString()).model).toBe('text-moderation-stable');
      await expect(client.moderations.create({ input: 'x', model: 'omni-moderation-lates' })).rejects.toMatchObject({
        status: 400,
        error: {
          param: 'model',
          message:
            'model: must be one of text-moderation-stable, text-moderation-latest, omni-moderation-latest, omni-moderation-2024-09-26, mistral-moderation-latest, mistral-moderation-2411',
        },
      });
    });
  });

  describe('rerank', () => {
    it('returns results sorted by relevance, most relevant first', async () => {
      const res = await post('/rerank', {
        model: 'rerank-v3.5',
        query: 'capital of France',
        documents: ['Berlin is in Germany', { text: 'Paris is the capital of France' }, 'The capital city'],
        top_n: 3,
        return_documents: true,
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        object: string;
        provider: string;
        results: Array<{ index: number; relevance_score: number; document: { text: string } }>;
      };
      expect(body.object).toBe('list');
      expect(body.provider).toBe('openai');
      expect(body.results.map((r) => r.index)).toEqual([1, 2, 0]);
      const scores = body.results.map((r) => r.relevance_score);
      expect([...scores].sort((a, b) => b - a)).toEqual(scores);
      expect(body.results[0]?.document.text).toBe('Paris is the capital of France');
      expect(last().path).toBe('/v1/rerank');
    });
  });

  it('caches idempotent endpoints when the config asks (embeddings, moderations, rerank)', async () => {
    const config = JSON.stringify({ provider: 'openai', custom_host: `${mock.url}/v1`, cache: { mode: 'simple', max_age: 60 } });
    const bodies: Array<[string, unknown]> = [
      ['/embeddings', { model: 'm', input: 'cache me', encoding_format: 'float' }],
      ['/moderations', { input: 'cache me' }],
      ['/rerank', { model: 'm', query: 'q', documents: ['a', 'q b'] }],
    ];
    for (const [path, body] of bodies) {
      const first = await post(path, body, { 'x-gw-config': config });
      expect(first.headers.get('x-gw-cache-status')).toBe('MISS');
      const text = await first.text();
      const calls = mock.received.length;
      // The entry is written once the answer has ended: ask again until it is there.
      let second = await post(path, body, { 'x-gw-config': config });
      for (let i = 0; i < 40 && second.headers.get('x-gw-cache-status') !== 'HIT'; i++) {
        await second.text();
        await new Promise((r) => setTimeout(r, 50));
        second = await post(path, body, { 'x-gw-config': config });
      }
      expect(second.headers.get('x-gw-cache-status')).toBe('HIT');
      expect(await second.text()).toBe(text);
      const after = mock.received.length;
      await post(path, body, { 'x-gw-config': config }).then((r) => r.text());
      expect(mock.received.length).toBe(after);
      expect(calls).toBeGreaterThan(0);
    }
  });

  it('answers 400 naming the provider and endpoint a provider lacks', async () => {
    const res = await post('/rerank', { model: 'm', query: 'q', documents: ['d'] }, { 'x-gw-provider': 'groq', 'x-gw-custom-host': '' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { param: string; message: string } };
    expect(body.error.param).toBe('x-gw-provider');
    expect(body.error.message).toContain('groq does not support the rerank endpoint');
    expect(mock.received).toHaveLength(0);
  });
});
