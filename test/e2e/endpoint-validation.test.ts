/**
 * Every request rule of the unified endpoints (docs/design/spec.md#request-limits where it gives them, OpenAI's otherwise),
 * through the local server in both modes: each bad body answers 400 in OpenAI's error shape with
 * `param` naming the field, and never reaches the provider.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { makePng, makeWav, multipart, type Part } from '../support/media.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';

type Body = Record<string, unknown> | { parts: Part[] } | { raw: string; type: string };

interface Case {
  path: string;
  body: Body;
  param: string | null;
  /** Part of the message, when worth checking. */
  says?: string;
}

const png = makePng(4, 4);
const wav = makeWav(0.05);
const image: Part = { name: 'image', value: png, filename: 'i.png', type: 'image/png' };
const audio: Part = { name: 'file', value: wav, filename: 'a.wav', type: 'audio/wav' };
const text = (name: string, value: string): Part => ({ name, value });

const completion = { model: 'm', prompt: 'p' };
const embedding = { model: 'm', input: 'x' };
const speech = { model: 'tts-1', input: 'hi', voice: 'alloy' };
const rerank = { model: 'm', query: 'q', documents: ['d'] };
const batch = { input_file_id: 'file-1', endpoint: '/v1/chat/completions', completion_window: '24h' };
const job = { model: 'gpt-4o-mini', training_file: 'file-1' };
const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
const c = (path: string, body: Body, param: string | null, says?: string): Case => ({ path, body, param, ...(says ? { says } : {}) });

const CASES: Case[] = [
  // /v1/completions
  c('/completions', { prompt: 'p' }, 'model', 'is required'),
  c('/completions', { model: '', prompt: 'p' }, 'model', 'must not be empty'),
  c('/completions', { model: 'm' }, 'prompt', 'is required'),
  c('/completions', { model: 'm', prompt: 5 }, 'prompt'),
  c('/completions', { model: 'm', prompt: [[1, 'a']] }, 'prompt'),
  c('/completions', { ...completion, best_of: 21 }, 'best_of', 'between 0 and 20'),
  c('/completions', { ...completion, best_of: -1 }, 'best_of'),
  c('/completions', { ...completion, best_of: 1.5 }, 'best_of', 'integer'),
  c('/completions', { ...completion, best_of: 2, n: 2 }, 'best_of', 'greater than n'),
  c('/completions', { ...completion, best_of: 3, stream: true }, 'best_of', 'stream'),
  c('/completions', { ...completion, logprobs: 6 }, 'logprobs', 'between 0 and 5'),
  c('/completions', { ...completion, logprobs: true }, 'logprobs'),
  c('/completions', { ...completion, max_tokens: -1 }, 'max_tokens', 'at least 0'),
  c('/completions', { ...completion, n: 0 }, 'n'),
  c('/completions', { ...completion, n: 129 }, 'n', 'between 1 and 128'),
  c('/completions', { ...completion, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop', 'at most 4'),
  c('/completions', { ...completion, temperature: 2.5 }, 'temperature', 'between 0 and 2'),
  c('/completions', { ...completion, top_p: 1.1 }, 'top_p', 'between 0 and 1'),
  c('/completions', { ...completion, frequency_penalty: 2.1 }, 'frequency_penalty'),
  c('/completions', { ...completion, presence_penalty: -3 }, 'presence_penalty'),
  c('/completions', { ...completion, logit_bias: { '50256': 101 } }, 'logit_bias.50256'),
  c('/completions', { ...completion, stream_options: { include_usage: true } }, 'stream_options', 'only allowed when stream is true'),
  c('/completions', { ...completion, echo: 'yes' }, 'echo'),
  c('/completions', { ...completion, suffix: 5 }, 'suffix'),
  c('/completions', { ...completion, seed: 1.5 }, 'seed'),
  c('/completions', { raw: '{"model": "m",', type: 'application/json' }, null, 'not valid JSON'),
  c('/completions', { raw: '[1, 2]', type: 'application/json' }, null, 'JSON object'),

  // /v1/embeddings
  c('/embeddings', { input: 'x' }, 'model'),
  c('/embeddings', { model: 'm' }, 'input', 'is required'),
  c('/embeddings', { model: 'm', input: '' }, 'input', 'must not be empty'),
  c('/embeddings', { model: 'm', input: [] }, 'input', 'must not be empty'),
  c('/embeddings', { model: 'm', input: ['a', ''] }, 'input[1]', 'must not be empty'),
  c('/embeddings', { model: 'm', input: ['a', 2] }, 'input[1]'),
  c('/embeddings', { model: 'm', input: [1, 'a'] }, 'input[1]'),
  c('/embeddings', { model: 'm', input: [[1], []] }, 'input[1]'),
  c('/embeddings', { model: 'm', input: 5 }, 'input'),
  c('/embeddings', { model: 'm', input: Array.from({ length: 2049 }, () => 'x') }, 'input', 'at most 2048'),
  c('/embeddings', { ...embedding, encoding_format: 'int8' }, 'encoding_format', 'float, base64'),
  c('/embeddings', { ...embedding, dimensions: 0 }, 'dimensions', 'at least 1'),

  // /v1/images/*
  c('/images/generations', { model: 'dall-e-3' }, 'prompt', 'is required'),
  c('/images/generations', { prompt: 'p', n: 0 }, 'n'),
  c('/images/generations', { prompt: 'p', n: 11 }, 'n', 'between 1 and 10'),
  c('/images/generations', { prompt: 'p', response_format: 'png' }, 'response_format'),
  c('/images/generations', { prompt: 'p', partial_images: 4 }, 'partial_images'),
  c('/images/edits', { parts: [text('prompt', 'p')] }, 'image', 'is required'),
  c('/images/edits', { parts: [text('image', 'not a file'), text('prompt', 'p')] }, 'image', 'must be a file'),
  c('/images/edits', { parts: [image] }, 'prompt', 'is required'),
  c('/images/edits', { parts: [image, text('prompt', 'p'), text('n', 'abc')] }, 'n', 'integer'),
  c('/images/edits', { parts: [image, text('prompt', 'p'), text('n', '11')] }, 'n', 'between 1 and 10'),
  c('/images/edits', { parts: [image, text('prompt', 'p'), text('response_format', 'gif')] }, 'response_format'),
  c('/images/edits', { prompt: 'p' }, 'content-type', 'multipart/form-data'),
  c('/images/variations', { parts: [text('n', '1')] }, 'image', 'is required'),

  // /v1/audio/*
  c('/audio/speech', { input: 'hi', voice: 'alloy' }, 'model'),
  c('/audio/speech', { model: 'tts-1', voice: 'alloy' }, 'input', 'is required'),
  c('/audio/speech', { ...speech, input: 'x'.repeat(4097) }, 'input', 'at most 4096'),
  c('/audio/speech', { model: 'tts-1', input: 'hi' }, 'voice', 'is required'),
  c('/audio/speech', { ...speech, voice: 5 }, 'voice'),
  c('/audio/speech', { ...speech, response_format: 'ogg' }, 'response_format'),
  c('/audio/speech', { ...speech, speed: 5 }, 'speed', 'between 0.25 and 4'),
  c('/audio/speech', { ...speech, stream_format: 'chunks' }, 'stream_format'),
  c('/audio/transcriptions', { parts: [text('model', 'whisper-1')] }, 'file', 'is required'),
  c('/audio/transcriptions', { parts: [audio] }, 'model', 'is required'),
  c('/audio/transcriptions', { parts: [audio, text('model', 'w'), text('response_format', 'mp3')] }, 'response_format'),
  c('/audio/transcriptions', { parts: [audio, text('model', 'w'), text('temperature', '2')] }, 'temperature', 'between 0 and 1'),
  c('/audio/transcriptions', { parts: [audio, text('model', 'w'), text('stream', 'yes')] }, 'stream', 'true or false'),
  c('/audio/translations', { parts: [text('model', 'whisper-1')] }, 'file'),
  c('/audio/translations', { parts: [audio, text('model', 'w'), text('response_format', 'diarized_json')] }, 'response_format'),

  // /v1/moderations
  c('/moderations', { model: 'text-moderation-latest' }, 'input', 'is required'),
  c('/moderations', { input: 5 }, 'input'),
  c('/moderations', { input: [] }, 'input', 'must not be empty'),
  c('/moderations', { input: 'x', model: 'omni-moderation-lates' }, 'model', 'text-moderation-stable, text-moderation-latest'),
  c('/moderations', { input: 'x', model: null }, 'model'),

  // /v1/rerank
  c('/rerank', { query: 'q', documents: ['d'] }, 'model'),
  c('/rerank', { model: 'm', documents: ['d'] }, 'query', 'is required'),
  c('/rerank', { model: 'm', query: 'q' }, 'documents', 'is required'),
  c('/rerank', { ...rerank, documents: [] }, 'documents', 'at least 1'),
  c('/rerank', { ...rerank, documents: [5] }, 'documents[0]'),
  c('/rerank', { ...rerank, documents: [{ title: 'no text' }] }, 'documents[0].text'),
  c('/rerank', { ...rerank, top_n: 0 }, 'top_n', 'at least 1'),
  c('/rerank', { ...rerank, return_documents: 'yes' }, 'return_documents'),
  c('/rerank', { ...rerank, max_tokens_per_doc: 0 }, 'max_tokens_per_doc', 'at least 1'),
  c('/rerank', { ...rerank, rank_fields: 'title' }, 'rank_fields'),

  // /v1/files
  c('/files', { parts: [text('purpose', 'batch')] }, 'file', 'is required'),
  c('/files', { parts: [{ name: 'file', value: 'x', filename: 'f.jsonl' }] }, 'purpose', 'is required'),
  c('/files', { parts: [{ name: 'file', value: 'x', filename: 'f.jsonl' }, text('purpose', 'training')] }, 'purpose', 'must be one of'),

  // /v1/batches
  c('/batches', { endpoint: '/v1/chat/completions', completion_window: '24h' }, 'input_file_id', 'is required'),
  c('/batches', { input_file_id: 'f', completion_window: '24h' }, 'endpoint', 'is required'),
  c('/batches', { ...batch, endpoint: 'chat/completions' }, 'endpoint'),
  c('/batches', { ...batch, completion_window: '48h' }, 'completion_window', 'must be 24h'),
  c('/batches', { input_file_id: 'f', endpoint: '/v1/embeddings' }, 'completion_window'),
  c('/batches', { ...batch, metadata: many(17) }, 'metadata', 'at most 16'),
  c('/batches', { ...batch, metadata: { ['k'.repeat(65)]: 'v' } }, `metadata.${'k'.repeat(65)}`, 'at most 64'),
  c('/batches', { ...batch, metadata: { k: 'v'.repeat(513) } }, 'metadata.k', 'at most 512'),
  c('/batches', { ...batch, metadata: { k: 5 } }, 'metadata.k'),

  // /v1/fine_tuning/jobs
  c('/fine_tuning/jobs', { training_file: 'f' }, 'model'),
  c('/fine_tuning/jobs', { model: 'm' }, 'training_file', 'is required'),
  c('/fine_tuning/jobs', { ...job, suffix: 's'.repeat(65) }, 'suffix', 'at most 64'),
  c('/fine_tuning/jobs', { ...job, metadata: many(17) }, 'metadata'),
  c('/fine_tuning/jobs', { ...job, hyperparameters: 'fast' }, 'hyperparameters'),

  // /v1/responses
  c('/responses', { model: 'm', input: 5 }, 'input'),
  c('/responses', { model: 'm', input: 'x', temperature: 3 }, 'temperature'),
  c('/responses', { model: 'm', input: 'x', top_p: 2 }, 'top_p'),
  c('/responses', { model: 'm', input: 'x', stream_options: { include_usage: true } }, 'stream_options'),
  c('/responses', { model: 'm', input: 'x', max_output_tokens: 0 }, 'max_output_tokens'),
  c('/responses', { model: 'm', input: 'x', truncation: 'middle' }, 'truncation'),
  c('/responses', { model: 'm', input: 'x', metadata: many(17) }, 'metadata'),

  // Assistants bodies are passed on as they are, but must be JSON objects.
  c('/assistants', { raw: '"just a string"', type: 'application/json' }, null, 'JSON object'),
];

describe.each(['direct', 'lambda'] as const)('endpoint validation (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAIApi;
  let key: string;

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAIApi()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it.each(CASES.map((k, i) => [`${i} ${k.path} ${k.param ?? '(body)'}`, k] as const))('%s', async (_, k) => {
    let body: Uint8Array<ArrayBuffer> | string;
    let type: string;
    if ('parts' in k.body && Array.isArray(k.body.parts)) ({ body, contentType: type } = multipart(k.body.parts));
    else if ('raw' in k.body && typeof k.body.raw === 'string') [body, type] = [k.body.raw, String(k.body.type)];
    else [body, type] = [JSON.stringify(k.body), 'application/json'];
    const res = await fetch(`${gw.url}/v1${k.path}`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, authorization: 'Bearer sk-x', 'content-type': type },
      body,
    });
    const json = (await res.json()) as { error: { type: string; param: string | null; message: string } };
    expect(res.status).toBe(400);
    expect(json.error.type).toBe('invalid_request_error');
    expect(json.error.param).toBe(k.param);
    if (k.says) expect(json.error.message).toContain(k.says);
    if (k.param) expect(json.error.message.startsWith(`${k.param}: `)).toBe(true);
    expect(mock.received).toHaveLength(0);
  });

  it('accepts the edges of every range', async () => {
    const ok = [
      ['/completions', { ...completion, best_of: 20, n: 19, logprobs: 0, max_tokens: 0, temperature: 2, top_p: 0, stop: ['a', 'b', 'c', 'd'] }],
      ['/completions', { ...completion, best_of: 0 }],
      ['/embeddings', { model: 'm', input: [[1, 2], [3]], dimensions: 1, encoding_format: 'base64' }],
      ['/moderations', { input: [{ type: 'text', text: 'x' }], model: 'text-moderation-stable' }],
      ['/rerank', { ...rerank, documents: [{ text: 'a', title: 't' }], top_n: 1, max_tokens_per_doc: 1, return_documents: false }],
      ['/batches', { ...batch, metadata: { ['k'.repeat(64)]: 'v'.repeat(512), ...many(15) } }],
    ] as const;
    mock.addFile(Buffer.from('x'), 'f', 'batch');
    for (const [path, body] of ok) {
      const res = await fetch(`${gw.url}/v1${path}`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': key,
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
          authorization: 'Bearer sk-x',
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      // The gateway let it through: whatever the mock thinks of it, it reached the mock.
      expect(res.headers.get('x-gw-provider'), `${path}: ${text}`).toBe('openai');
    }
  });
});
