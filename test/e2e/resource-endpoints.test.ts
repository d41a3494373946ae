/**
 * The resource endpoints end to end through the local server in both modes, with the official
 * openai SDK (plain HTTP where it has no call): files (multipart upload, list, retrieve, binary
 * download, delete), batches (the batch object, cancel, output), fine-tuning jobs (events,
 * checkpoints, cancel), assistants/threads/messages/runs, and responses (JSON and streamed).
 */
import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sha256, startMockOpenAIApi, type MockOpenAIApi } from '../support/mock-openai-api.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';

describe.each(['direct', 'lambda'] as const)('resource endpoints (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAIApi;
  let key: string;
  let client: OpenAI;

  const gatewayHeaders = () => ({ 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1` });
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1${path}`, { headers: { ...gatewayHeaders(), authorization: 'Bearer sk-test', ...headers } });
  const last = () => mock.received.at(-1)!;

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode), startMockOpenAIApi()]);
    key = await gw.workspaceKey();
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: gatewayHeaders() });
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => mock.reset());

  describe('files', () => {
    it('uploads (multipart), lists, retrieves, downloads the exact bytes, and deletes', async () => {
      const content = Buffer.concat([Buffer.from('{"custom_id":"1"}\n'), randomBytes(3000)]);
      const file = await client.files.create({ file: await toFile(content, 'input.jsonl'), purpose: 'batch' });
      expect(file).toMatchObject({ object: 'file', bytes: content.length, filename: 'input.jsonl', purpose: 'batch' });
      expect(last().form?.files.file?.sha256).toBe(sha256(content));

      const second = await client.files.create({ file: await toFile(Buffer.from('x'), 'other.jsonl'), purpose: 'fine-tune' });
      const batchFiles = await client.files.list({ purpose: 'batch', limit: 5 });
      expect(batchFiles.data.map((f) => f.id)).toEqual([file.id]);
      expect(last().url).toBe('/v1/files?purpose=batch&limit=5');

      expect(await client.files.retrieve(file.id)).toMatchObject({ id: file.id, filename: 'input.jsonl' });
      expect(last().path).toBe(`/v1/files/${file.id}`);

      const download = await client.files.content(file.id);
      expect(download.headers.get('content-type')).toBe('application/octet-stream');
      expect(download.headers.get('content-disposition')).toBe('attachment; filename="input.jsonl"');
      expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(content));

      expect(await client.files.delete(second.id)).toEqual({ id: second.id, object: 'file', deleted: true });
      expect(last().method).toBe('DELETE');
      await expect(client.files.retrieve(second.id)).rejects.toMatchObject({ status: 404, error: { message: `No such File object: ${second.id}` } });
    });

    it('encodes path parameters and refuses ones that would leave the path', async () => {
      const res = await get('/files/file%20one%3Fx');
      expect(res.status).toBe(404);
      expect(last().url).toBe('/v1/files/file%20one%3Fx');

      const before = mock.received.length;
      const bad = await get('/files/a%2F..%2F..%2Fadmin');
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { param: string } }).error.param).toBe('file_id');
      expect(mock.received.length).toBe(before);
    });
  });

  describe('batches', () => {
    it('creates, lists, retrieves (the batch object), cancels, and reads the output', async () => {
      const input = mock.addFile(Buffer.from('{"custom_id":"a"}\n'), 'in.jsonl', 'batch');
      const batch = await client.batches.create({
        input_file_id: input,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
        metadata: { team: 'search' },
      });
      expect(batch).toMatchObject({ object: 'batch', status: 'validating', input_file_id: input, metadata: { team: 'search' } });

      const listed = await client.batches.list({ limit: 10 });
      expect(listed.data.map((b) => b.id)).toContain(batch.id);
      expect(last().url).toBe('/v1/batches?limit=10');

      const got = await client.batches.retrieve(batch.id);
      for (const field of ['id', 'object', 'endpoint', 'input_file_id', 'completion_window', 'status', 'created_at']) expect(got).toHaveProperty(field);
      expect(got.request_counts).toEqual({ total: 0, completed: 0, failed: 0 });
      expect(typeof got.created_at).toBe('number');

      // Not finished: the output is not there yet.
      const early = await get(`/batches/${batch.id}/output`);
      expect(early.status).toBe(404);
      expect(await early.json()).toMatchObject({ error: { param: 'batch_id', code: 'batch_output_not_ready' } });

      const output = Buffer.from('{"id":"r1","custom_id":"a","response":{"status_code":200}}\n');
      mock.completeBatch(batch.id, mock.addFile(output, 'out.jsonl', 'batch_output'));
      const res = await get(`/batches/${batch.id}/output`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gw-provider')).toBe('openai');
      expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(output));

      const cancelled = await client.batches.cancel(batch.id);
      expect(cancelled.status).toBe('cancelling');
      expect(last()).toMatchObject({ method: 'POST', path: `/v1/batches/${batch.id}/cancel` });
    });
  });

  describe('fine-tuning', () => {
    it('creates, lists, retrieves, lists events and checkpoints, and cancels', async () => {
      const job = await client.fineTuning.jobs.create({ model: 'gpt-4o-mini-2024-07-18', training_file: 'file-abc', suffix: 'custom', seed: 7 });
      expect(job).toMatchObject({ object: 'fine_tuning.job', status: 'queued', training_file: 'file-abc', seed: 7 });

      const jobs = await client.fineTuning.jobs.list({ limit: 2 });
      expect(jobs.data[0]?.id).toBe(job.id);
      expect((await client.fineTuning.jobs.retrieve(job.id)).id).toBe(job.id);

      const events = await client.fineTuning.jobs.listEvents(job.id, { limit: 2 });
      expect(events.data.map((e) => e.object)).toEqual(['fine_tuning.job.event', 'fine_tuning.job.event']);
      expect(last().url).toBe(`/v1/fine_tuning/jobs/${job.id}/events?limit=2`);

      const checkpoints = await client.fineTuning.jobs.checkpoints.list(job.id);
      expect(checkpoints.data[0]).toMatchObject({ object: 'fine_tuning.job.checkpoint', fine_tuning_job_id: job.id });

      expect((await client.fineTuning.jobs.cancel(job.id)).status).toBe('cancelled');
    });
  });

  describe('assistants', () => {
    it('runs an assistant on a thread, forwarding the OpenAI-Beta header', async () => {
      const assistant = await client.beta.assistants.create({ model: 'gpt-4o', name: 'Math tutor', instructions: 'Be exact.' });
      expect(assistant.object).toBe('assistant');
      expect(last().headers['openai-beta']).toBe('assistants=v2');

      const thread = await client.beta.threads.create({ metadata: { user: 'u1' } });
      const message = await client.beta.threads.messages.create(thread.id, { role: 'user', content: 'What is 2+2?' });
      expect(message).toMatchObject({ object: 'thread.message', thread_id: thread.id });
      const messages = await client.beta.threads.messages.list(thread.id);
      expect(messages.data.map((m) => m.id)).toEqual([message.id]);

      const run = await client.beta.threads.runs.create(thread.id, { assistant_id: assistant.id });
      expect(run).toMatchObject({ object: 'thread.run', status: 'queued', thread_id: thread.id });
      const done = await client.beta.threads.runs.retrieve(run.id, { thread_id: thread.id });
      expect(done.status).toBe('completed');
      const steps = await client.beta.threads.runs.steps.list(run.id, { thread_id: thread.id });
      expect(steps.data[0]?.type).toBe('message_creation');
      expect(last().path).toBe(`/v1/threads/${thread.id}/runs/${run.id}/steps`);

      const events: string[] = [];
      const stream = await client.beta.threads.createAndRun({ assistant_id: assistant.id, stream: true });
      for await (const e of stream) events.push(e.event);
      expect(events).toEqual(['thread.run.created', 'thread.run.in_progress', 'thread.run.completed']);
      expect(last().path).toBe('/v1/threads/runs');

      expect((await client.beta.threads.delete(thread.id)).deleted).toBe(true);
      expect((await client.beta.assistants.delete(assistant.id)).deleted).toBe(true);
    });

    it('lets the provider refuse a call without the beta header', async () => {
      const res = await get('/assistants');
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: 'invalid_beta' } });
    });
  });

  describe('responses', () => {
    it('creates, retrieves, lists input items, and deletes', async () => {
      const created = await client.responses.create({ model: 'gpt-4.1', input: 'Hello', metadata: { run: '1' } });
      expect(created.output_text).toBe('You said: Hello');
      expect((await client.responses.retrieve(created.id)).id).toBe(created.id);
      const items = await client.responses.inputItems.list(created.id);
      expect(items.data[0]).toMatchObject({ type: 'message', role: 'user' });
      await client.responses.delete(created.id);
      expect(last()).toMatchObject({ method: 'DELETE', path: `/v1/responses/${created.id}` });
      await expect(client.responses.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    });

    it('streams response events', async () => {
      const stream = await client.responses.create({ model: 'gpt-4.1', input: 'Stream me', stream: true });
      const types: string[] = [];
      let text = '';
      for await (const e of stream) {
        types.push(e.type);
        if (e.type === 'response.output_text.delta') text += e.delta;
      }
      expect(types[0]).toBe('response.created');
      expect(types.at(-1)).toBe('response.completed');
      expect(text).toBe('You said: Stream me');
    });
  });

  it('never caches files, batches, fine-tuning, assistants or responses, even when the config asks', async () => {
    const config = JSON.stringify({ provider: 'openai', custom_host: `${mock.url}/v1`, cache: { mode: 'simple', max_age: 60 } });
    const body = JSON.stringify({ model: 'gpt-4.1', input: 'same' });
    for (let i = 0; i < 2; i++) {
      const list = await get('/files', { 'x-gw-config': config });
      expect(list.headers.get('x-gw-cache-status')).toBe('DISABLED');
      const created = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { 'x-gw-api-key': key, 'x-gw-config': config, authorization: 'Bearer sk-x', 'content-type': 'application/json' },
        body,
      });
      expect(created.headers.get('x-gw-cache-status')).toBe('DISABLED');
    }
    expect(mock.received.map((r) => `${r.method} ${r.path}`)).toEqual(['GET /v1/files', 'POST /v1/responses', 'GET /v1/files', 'POST /v1/responses']);
  });

  it('applies x-gw-request-timeout and a config request_timeout to file and batch calls (408)', async () => {
    mock.delays.set('GET /v1/files/file-slow', 2_000);
    const res = await get('/files/file-slow', { 'x-gw-request-timeout': '50' });
    expect(res.status).toBe(408);
    expect(await res.json()).toMatchObject({ error: { type: 'timeout_error' } });

    mock.delays.set('POST /v1/batches', 2_000);
    const config = { provider: 'openai', api_key: 'sk-cfg', custom_host: `${mock.url}/v1`, request_timeout: 50 };
    const batch = await fetch(`${gw.url}/v1/batches`, {
      method: 'POST',
      headers: { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config), 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: 'file-1', endpoint: '/v1/embeddings', completion_window: '24h' }),
    });
    expect(batch.status).toBe(408);
  });
});
