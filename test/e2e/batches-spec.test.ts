/**
 * Batches and files as the contract (docs/batches.md) and OpenAI's API have them, end to end:
 * - every object Gantry answers itself (Batch in each status, File, file deletion, the list
 *   envelopes, models, errors) validates against OpenAI's published schemas, vendored in
 *   test/support/openai-schemas (source and commit noted there), in both modes;
 * - an upload of purpose `batch` takes any file of UTF-8 lines; a batch created on it judges the
 *   lines and fails with `errors.data` (`code`, `message`, `param`, `line`) and an error file;
 * - a Gantry stopped mid-batch and another started on the same table finish the batch: the lines
 *   in flight run once more, every line has exactly one result.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BatchObject } from '../../layers/core/src/batches/object.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import type { LocalBatchDriver } from '../../layers/core/src/batches/local-driver.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockBatchProvider, USAGE, type MockBatchProvider } from '../support/mock-batch-provider.ts';
import { openaiSchemaErrors } from '../support/openai-schemas/validate.ts';

type Json = Record<string, unknown>;
const START = Date.UTC(2026, 5, 1, 0, 0, 0);
const CHAT = '/v1/chat/completions';

const chatLine = (custom_id: string, body: Json = {}) =>
  JSON.stringify({ custom_id, method: 'POST', url: CHAT, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: custom_id }], ...body } });
const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const parse = (text: string): Json[] =>
  text
    .trimEnd()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Json);

/** A Gantry with a mock provider, and the calls a batch test makes on it. */
function harness(gw: () => TestGantry, mock: () => MockBatchProvider, key: () => string) {
  const auth = () => ({ 'x-gw-api-key': key() });
  const providerHeaders = () => ({ ...auth(), 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock().url}/v1`, authorization: 'Bearer sk-provider' });
  const call = async (method: string, path: string, init: { headers?: Record<string, string>; body?: BodyInit } = {}) => {
    const res = await fetch(`${gw().url}${path}`, { method, headers: { ...auth(), ...init.headers }, ...(init.body === undefined ? {} : { body: init.body }) });
    const text = await res.text();
    return { status: res.status, text, json: (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined) as Json };
  };
  const upload = (content: BlobPart, purpose = 'batch', filename = 'in.jsonl') => {
    const form = new FormData();
    form.append('file', new Blob([content]), filename);
    form.append('purpose', purpose);
    return call('POST', '/v1/files', { body: form });
  };
  const createBatch = (fileId: string) =>
    call('POST', '/v1/batches', {
      headers: { ...providerHeaders(), 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: fileId, endpoint: CHAT, completion_window: 'immediate', metadata: { job: 'spec' } }),
    });
  const driver = () => gw().deps.batchRunner as LocalBatchDriver;
  return { call, upload, createBatch, driver };
}

/** The answer, checked against OpenAI's schema of that name; its body. */
function conforms(name: string, answer: { status: number; json: Json }, status = 200): Json {
  expect(answer.status, JSON.stringify(answer.json)?.slice(0, 300)).toBe(status);
  expect(openaiSchemaErrors(name, answer.json), `${name}: ${JSON.stringify(answer.json).slice(0, 300)}`).toEqual([]);
  return answer.json;
}

describe.each(['direct', 'lambda'] as const)("Gantry's own answers against OpenAI's published schemas (%s mode)", (mode) => {
  let gw: TestGantry;
  let mock: MockBatchProvider;
  let key: string;
  const clock = new ManualClock(START);
  const h = harness(
    () => gw,
    () => mock,
    () => key,
  );

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, {}, { clock }), startMockBatchProvider()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await h.driver()?.idle();
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    clock.set(START);
    mock.gate = undefined;
  });

  it('files: upload, retrieve, list, delete, and their errors', async () => {
    const file = conforms('OpenAIFile', await h.upload(`${chatLine('a')}\n`));
    expect(file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'in.jsonl' });
    for (const purpose of ['assistants', 'fine-tune', 'vision', 'user_data']) conforms('OpenAIFile', await h.upload('{}', purpose, `${purpose}.bin`));
    conforms('OpenAIFile', await h.call('GET', `/v1/files/${String(file.id)}`));
    const list = conforms('ListFilesResponse', await h.call('GET', '/v1/files?limit=2'));
    expect(list).toMatchObject({ object: 'list', has_more: true });
    conforms('ListFilesResponse', await h.call('GET', '/v1/files?purpose=batch&order=asc'));
    expect(conforms('DeleteFileResponse', await h.call('DELETE', `/v1/files/${String(file.id)}`))).toEqual({ id: file.id, object: 'file', deleted: true });
    conforms('ErrorResponse', await h.call('GET', `/v1/files/${String(file.id)}`), 404);
    conforms('ErrorResponse', await h.call('DELETE', '/v1/files/file-nope'), 404);
    conforms('ErrorResponse', await h.upload('{}', 'training'), 400);
    conforms('ErrorResponse', await h.call('GET', '/v1/files?limit=0'), 400);
    conforms('ErrorResponse', await h.upload(Buffer.from([0x7b, 0xff, 0x7d, 0x0a])), 400);
  });

  it('batches: validating, completed (usage with its details), failed, cancelling, cancelled, the list, their files and errors', async () => {
    const input = conforms('OpenAIFile', await h.upload(['a', 'b', 'c'].map((id) => chatLine(id, id === 'c' ? { model: 'no-such-model' } : {})).join('\n')));
    const created = conforms('Batch', await h.createBatch(String(input.id)));
    expect(created.status).toBe('validating');
    await h.driver().idle();
    const done = conforms('Batch', await h.call('GET', `/v1/batches/${String(created.id)}`)) as unknown as BatchObject;
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 2, failed: 1 } });
    expect(done.usage).toEqual({
      input_tokens: 2 * USAGE.prompt_tokens,
      input_tokens_details: { cached_tokens: 2 * USAGE.prompt_tokens_details.cached_tokens },
      output_tokens: 2 * USAGE.completion_tokens,
      output_tokens_details: { reasoning_tokens: 2 * USAGE.completion_tokens_details.reasoning_tokens },
      total_tokens: 2 * USAGE.total_tokens,
    });
    for (const id of [done.output_file_id, done.error_file_id])
      expect(conforms('OpenAIFile', await h.call('GET', `/v1/files/${String(id)}`)).purpose).toBe('batch_output');

    const bad = conforms('OpenAIFile', await h.upload([chatLine('x'), '{not json'].join('\n')));
    const failing = conforms('Batch', await h.createBatch(String(bad.id)));
    await h.driver().idle();
    const failed = conforms('Batch', await h.call('GET', `/v1/batches/${String(failing.id)}`));
    expect(failed).toMatchObject({ status: 'failed', errors: { object: 'list', data: [{ code: 'invalid_json_line', line: 2 }] } });

    let release!: () => void;
    mock.gate = new Promise<void>((r) => (release = r));
    const held = conforms('Batch', await h.createBatch(String(conforms('OpenAIFile', await h.upload([chatLine('held'), chatLine('never')].join('\n'))).id)));
    await mock.held(2);
    expect(conforms('Batch', await h.call('POST', `/v1/batches/${String(held.id)}/cancel`)).status).toBe('cancelling');
    release();
    await h.driver().idle();
    expect(conforms('Batch', await h.call('GET', `/v1/batches/${String(held.id)}`)).status).toBe('cancelled');

    const list = conforms('ListBatchesResponse', await h.call('GET', '/v1/batches?limit=2'));
    expect(list).toMatchObject({ object: 'list', has_more: true, first_id: (list.data as Json[])[0]?.id });
    conforms('ErrorResponse', await h.call('POST', `/v1/batches/${String(created.id)}/cancel`), 409);
    conforms('ErrorResponse', await h.call('GET', '/v1/batches/batch_nope'), 404);
    conforms('ErrorResponse', await h.call('GET', `/v1/batches/${String(failing.id)}/output`), 404);
    conforms('ErrorResponse', await h.call('GET', '/v1/batches?limit=1000'), 400);
    conforms('ErrorResponse', await h.createBatch('file-nope'), 404);
  });

  it('models: the list, one model, and an unknown one', async () => {
    const list = conforms('ListModelsResponse', await h.call('GET', '/v1/models'));
    expect((list.data as Json[]).length).toBeGreaterThan(100);
    conforms('ListModelsResponse', await h.call('GET', '/v1/models', { headers: { 'x-gw-provider': 'openai' } }));
    conforms('Model', await h.call('GET', '/v1/models/gpt-4o-mini', { headers: { 'x-gw-provider': 'openai' } }));
    conforms('ErrorResponse', await h.call('GET', '/v1/models/no-such-model', { headers: { 'x-gw-provider': 'openai' } }), 404);
    conforms('ErrorResponse', await h.call('GET', '/v1/models', { headers: { 'x-gw-api-key': 'gw_wrong' } }), 401);
  });
});

describe('batch input judged when a batch is created on it, as OpenAI does', () => {
  let gw: TestGantry;
  let mock: MockBatchProvider;
  let key: string;
  const h = harness(
    () => gw,
    () => mock,
    () => key,
  );

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry('direct', {}, { clock: new ManualClock(START) }), startMockBatchProvider()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await h.driver()?.idle();
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('takes the upload, then fails the batch with every bad line in errors.data and every line in its error file', async () => {
    const lines = [
      chatLine('a'),
      '{not json',
      chatLine('b'),
      chatLine('a'),
      JSON.stringify({ custom_id: 'c', method: 'GET', url: CHAT, body: {} }),
      '',
      JSON.stringify({ custom_id: 'd', method: 'POST', url: 'chat', body: {} }),
      JSON.stringify({ custom_id: 'e', method: 'POST', url: CHAT }),
      chatLine('f', { temperature: 3 }),
    ];
    const file = await h.upload(lines.join('\n') + '\n');
    expect(file.status).toBe(200);
    const client = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: key,
      maxRetries: 0,
      defaultHeaders: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, authorization: 'Bearer sk-provider' },
    });
    const created = await client.batches.create({ input_file_id: String(file.json.id), endpoint: CHAT, completion_window: 'immediate' as '24h' });
    expect(created.status).toBe('validating');
    await h.driver().idle();

    const b = await client.batches.retrieve(created.id);
    expect(openaiSchemaErrors('Batch', b)).toEqual([]);
    const problems = [
      { code: 'invalid_json_line', message: 'The line is not valid JSON.', param: null, line: 2 },
      { code: 'duplicate_custom_id', message: 'custom_id "a" is already used on line 1.', param: 'custom_id', line: 4 },
      { code: 'invalid_request', message: 'The line\'s method must be "POST".', param: 'method', line: 5 },
      { code: 'empty_line', message: 'The line is empty.', param: null, line: 6 },
      { code: 'invalid_request', message: "The line's url must be a /v1/ path, e.g. /v1/chat/completions.", param: 'url', line: 7 },
      { code: 'invalid_request', message: "The line's body must be a JSON object.", param: 'body', line: 8 },
      { code: 'invalid_request', message: expect.stringContaining('temperature'), param: 'body.temperature', line: 9 },
    ];
    expect(b).toMatchObject({
      status: 'failed',
      output_file_id: null,
      request_counts: { total: 9, completed: 0, failed: 9 },
      errors: { object: 'list', data: problems },
    });
    expect(b.in_progress_at).toBeNull();

    // Files held by Gantry: asked without naming a provider.
    const files = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 }).files;
    const errorFile = await files.retrieve(b.error_file_id as string);
    expect(errorFile).toMatchObject({ purpose: 'batch_output', filename: `${b.id}_error.jsonl` });
    const notRun = (line: number) => ({ code: 'batch_failed', message: expect.stringContaining('failed validation'), param: null, line });
    const byLine = new Map(problems.map((p) => [p.line, p]));
    const customIds = ['a', null, 'b', 'a', 'c', null, 'd', 'e', 'f'];
    expect(parse(await (await files.content(errorFile.id)).text())).toEqual(
      customIds.map((custom_id, i) => ({
        id: expect.stringMatching(/^batch_req_[0-9a-f]{24}$/),
        custom_id,
        response: null,
        error: byLine.get(i + 1) ?? notRun(i + 1),
      })),
    );
    expect(mock.calls.size).toBe(0);
  });

  it('refuses at upload only what is not a file of lines: bytes that are not UTF-8, naming the line', async () => {
    const res = await h.upload(Buffer.concat([Buffer.from(`${chatLine('a')}\n`), Buffer.from([0x22, 0xc3, 0x28, 0x22, 0x0a])]));
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ param: 'file', code: 'invalid_batch_file', message: 'file: line 2: is not UTF-8 text' });
  });

  it('fails a batch on an empty file with empty_file, and writes no error file', async () => {
    const file = await h.upload('');
    expect(file.status).toBe(200);
    const created = await h.createBatch(String(file.json.id));
    await h.driver().idle();
    const b = (await h.call('GET', `/v1/batches/${String(created.json.id)}`)).json;
    expect(b).toMatchObject({
      status: 'failed',
      error_file_id: null,
      request_counts: { total: 0, completed: 0, failed: 0 },
      errors: { data: [{ code: 'empty_file', param: 'input_file_id', line: null }] },
    });
  });
});

describe('a Gantry stopped mid-batch and another started on the same table', () => {
  let first: TestGantry | undefined;
  let second: TestGantry | undefined;
  let mock: MockBatchProvider;
  const clock = new ManualClock(START);

  beforeAll(async () => {
    [first, mock] = await Promise.all([startGantry('direct', {}, { clock }), startMockBatchProvider()]);
  });
  afterAll(async () => {
    await Promise.all([first?.close(), second?.close(), mock?.close()]);
  });

  it('runs the lines that were in flight once more and finishes the batch: one result a line', async () => {
    const gw1 = first as TestGantry;
    const key = await gw1.workspaceKey();
    const h1 = harness(
      () => gw1,
      () => mock,
      () => key,
    );
    let release!: () => void;
    mock.gate = new Promise<void>((r) => (release = r));
    const file = await h1.upload(
      ids(24, 'r')
        .map((id) => chatLine(id))
        .join('\n'),
    );
    const created = (await h1.createBatch(String(file.json.id))).json;
    await mock.held(4);
    // The process dies: nothing in flight is recorded, nothing more starts.
    await h1.driver().abort();
    await gw1.close();
    first = undefined;
    release();
    mock.gate = undefined;

    // `npm start` again, on the same table, data directory and key file: it resumes unfinished batches.
    const gw2 = await startGantry(
      'direct',
      { TABLE_NAME: gw1.deps.config.tableName, GW_BLOB_DIR: gw1.deps.config.blobDir as string },
      { clock, cipher: gw1.deps.cipher },
    );
    second = gw2;
    const h2 = harness(
      () => gw2,
      () => mock,
      () => key,
    );
    expect(await h2.driver().resume()).toEqual([created.id]);
    await h2.driver().idle();

    const b = conforms('Batch', await h2.call('GET', `/v1/batches/${String(created.id)}`));
    expect(b).toMatchObject({ status: 'completed', error_file_id: null, request_counts: { total: 24, completed: 24, failed: 0 } });
    const output = parse((await h2.call('GET', `/v1/files/${String(b.output_file_id)}/content`)).text);
    expect(output.map((l) => l.custom_id)).toEqual(ids(24, 'r'));
    expect(output.every((l) => (l.response as Json).status_code === 200 && l.error === null)).toBe(true);
    // The four in flight reached the provider twice (before the stop and after); every other line once.
    const interrupted = ids(4, 'r');
    expect(Object.fromEntries(mock.calls)).toEqual(Object.fromEntries(ids(24, 'r').map((id) => [id, interrupted.includes(id) ? 2 : 1])));
    expect((b.usage as Json).total_tokens).toBe(24 * USAGE.total_tokens);
  });
});
