/**
 * Batches run by the gateway, end to end: a JSONL file held by Gantry runs line by line through
 * the pipeline against a real HTTP mock provider, on DynamoDB Local, driven by the local in-process
 * driver; time is a ManualClock. Every status path, per-line errors with line numbers, the output
 * and error files byte for byte in OpenAI's format, cancel, expiry, 429 back-off, crashes of the
 * driver mid-batch, usage equal to the sum of the lines' logs, limits and guardrails per line.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { BatchObject } from '../../layers/core/src/batches/object.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { LocalBatchDriver } from '../../layers/core/src/batches/local-driver.ts';
import { createTestDepsOn } from '../support/deps.ts';
import { startMockServer } from '../support/mock-http.ts';
import { scanTable } from '../support/records.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockBatchProvider, USAGE, type MockBatchProvider } from '../support/mock-batch-provider.ts';
import { waitFor } from '../support/observability.ts';

type Json = Record<string, unknown>;
const START = Date.UTC(2026, 0, 1, 0, 0, 5);

const chatLine = (custom_id: string, body: Json = {}, url = '/v1/chat/completions') =>
  JSON.stringify({ custom_id, method: 'POST', url, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: custom_id }], ...body } });
const ids = (n: number, prefix = 'l') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('batches run by the gateway', () => {
  let gw: TestGantry;
  let mock: MockBatchProvider;
  let key: string;
  const clock = new ManualClock(START);

  const driver = () => gw.deps.batchRunner as LocalBatchDriver;
  const providerHeaders = (extra: Record<string, string> = {}) => ({
    'x-gw-api-key': key,
    'x-gw-provider': 'openai',
    'x-gw-custom-host': `${mock.url}/v1`,
    authorization: 'Bearer sk-provider-secret',
    ...extra,
  });
  const upload = async (lines: string[], purpose = 'batch'): Promise<string> => {
    const form = new FormData();
    form.append('file', new Blob([`${lines.join('\n')}\n`]), 'in.jsonl');
    form.append('purpose', purpose);
    const res = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { 'x-gw-api-key': key }, body: form });
    expect(res.status).toBe(200);
    return ((await res.json()) as { id: string }).id;
  };
  const create = (body: Json, headers: Record<string, string> = providerHeaders()) =>
    fetch(`${gw.url}/v1/batches`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const createOk = async (fileId: string, headers?: Record<string, string>, extra: Json = {}): Promise<BatchObject> => {
    const res = await create({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: 'immediate', ...extra }, headers);
    expect(res.status).toBe(200);
    return (await res.json()) as BatchObject;
  };
  const get = async (id: string): Promise<BatchObject> =>
    (await fetch(`${gw.url}/v1/batches/${id}`, { headers: { 'x-gw-api-key': key } })).json() as Promise<BatchObject>;
  const content = async (fileId: string | null | undefined): Promise<string> =>
    (await fetch(`${gw.url}/v1/files/${String(fileId)}/content`, { headers: { 'x-gw-api-key': key } })).text();
  const parse = (text: string): Json[] =>
    text
      .trimEnd()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Json);
  const customIds = (text: string) => parse(text).map((l) => l.custom_id);

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry('direct', {}, { clock }), startMockBatchProvider()]);
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await driver()?.idle();
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    clock.set(START);
    mock.calls.clear();
    mock.gate = undefined;
  });

  it('runs every line through the pipeline and writes OpenAI-format output and error files, byte for byte', async () => {
    const fileId = await upload([chatLine('a'), chatLine('b', { temperature: 0.5 }), chatLine('c', { model: 'no-such-model' })]);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, defaultHeaders: providerHeaders() });
    const created = await client.batches.create({
      input_file_id: fileId,
      endpoint: '/v1/chat/completions',
      completion_window: 'immediate' as '24h',
      metadata: { job: 'nightly' },
    });
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      input_file_id: fileId,
      completion_window: 'immediate',
      created_at: Math.floor(START / 1000),
      metadata: { job: 'nightly' },
    });
    expect(created.id).toMatch(/^batch_[a-z0-9]+$/);
    await driver().idle();

    const done = await client.batches.retrieve(created.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 2, failed: 1 }, errors: null });
    for (const at of ['in_progress_at', 'finalizing_at', 'completed_at'] as const) expect(done[at]).toBe(Math.floor(START / 1000));
    expect(done.expires_at).toBe(Math.floor(START / 1000) + 24 * 3600);
    expect(done.failed_at ?? null).toBeNull();
    expect([...mock.calls.entries()].sort()).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);

    const output = await content(done.output_file_id);
    const outLines = parse(output);
    const expected = outLines
      .map((l, i) => {
        const cid = ['a', 'b'][i] as string;
        const body = {
          id: `chatcmpl-${cid}`,
          object: 'chat.completion',
          created: 1_750_000_000,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: `echo ${cid}` }, logprobs: null, finish_reason: 'stop' }],
          usage: USAGE,
        };
        const response = (l.response as Json).request_id as string;
        return `{"id":${JSON.stringify(l.id)},"custom_id":"${cid}","response":{"status_code":200,"request_id":${JSON.stringify(response)},"body":${JSON.stringify(body)}},"error":null}\n`;
      })
      .join('');
    expect(output).toBe(expected);
    expect(outLines.every((l) => /^batch_req_[0-9a-f]{24}$/.test(l.id as string))).toBe(true);
    // GET /v1/batches/{id}/output streams the same bytes.
    expect(await (await fetch(`${gw.url}/v1/batches/${created.id}/output`, { headers: { 'x-gw-api-key': key } })).text()).toBe(output);

    const errorText = await content(done.error_file_id);
    const [errLine] = parse(errorText);
    const errBody = (errLine!.response as Json).body as Json;
    expect(errorText).toBe(
      `{"id":${JSON.stringify(errLine!.id)},"custom_id":"c","response":{"status_code":404,"request_id":${JSON.stringify((errLine!.response as Json).request_id)},"body":${JSON.stringify(errBody)}},"error":null}\n`,
    );
    expect(errBody).toMatchObject({ error: { code: 'model_not_found' } });

    // One request log per line, carrying the batch id; the batch's usage is their sum.
    let tokens = 0;
    for (const l of [...outLines, errLine!]) {
      const log = await waitFor(gw.deps, async () => {
        const res = await gw.admin('GET', `/v1/logs/${String((l.response as Json).request_id)}`);
        return res.status === 200 ? res.json : undefined;
      });
      expect(log.metadata).toMatchObject({ _batch_id: created.id, _batch_custom_id: l.custom_id });
      tokens += Number(log.total_tokens ?? 0);
    }
    expect(tokens).toBe(2 * USAGE.total_tokens);
    expect((done as unknown as BatchObject).usage).toEqual({
      input_tokens: 2 * USAGE.prompt_tokens,
      input_tokens_details: { cached_tokens: 2 * USAGE.prompt_tokens_details.cached_tokens },
      output_tokens: 2 * USAGE.completion_tokens,
      output_tokens_details: { reasoning_tokens: 2 * USAGE.completion_tokens_details.reasoning_tokens },
      total_tokens: tokens,
    });

    // Without a provider named, the list is of the batches the gateway holds.
    const list = (await (await fetch(`${gw.url}/v1/batches?limit=1`, { headers: { 'x-gw-api-key': key } })).json()) as {
      data: BatchObject[];
      has_more: boolean;
    };
    expect(list.data.map((b) => b.id)).toEqual([created.id]);
  });

  it('finalizes a batch whose answers span several pages of line records (over 1 MB): every line once, in input order', async () => {
    // Each answer echoes a 24 KB message: 60 lines hold about 1.5 MB of answers, more than one Query page.
    const names = ids(60, 'big').map((id) => `${id}-${'x'.repeat(24_000)}`);
    const created = await createOk(await upload(names.map((n) => chatLine(n))));
    await driver().idle();
    const done = await get(created.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 60, completed: 60, failed: 0 } });
    const out = parse(await content(done.output_file_id));
    expect(out.map((l) => l.custom_id)).toEqual(names);
    expect(out.map((l) => (((l.response as Json).body as Json).choices as Json[])[0]?.message)).toEqual(
      names.map((n) => ({ role: 'assistant', content: `echo ${n}` })),
    );
    expect(done.error_file_id ?? null).toBeNull();
    expect([...mock.calls.values()].every((n) => n === 1)).toBe(true);
  });

  it('runs lines whose custom_id is not ASCII, and keeps an answer of 420 KB in UTF-8 (140,000 three-byte characters, past the 400 KB an item holds) out of the table item', async () => {
    const texts = ['短', `中${'中'.repeat(140_000)}`, 'é'];
    const lines = texts.map((text, i) =>
      JSON.stringify({
        custom_id: `客户-${i}`,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }] },
      }),
    );
    const created = await createOk(await upload(lines));
    await driver().idle();
    const done = await get(created.id);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 3, failed: 0 } });
    const out = parse(await content(done.output_file_id));
    expect(out.map((l) => l.custom_id)).toEqual(['客户-0', '客户-1', '客户-2']);
    expect(out.map((l) => (((l.response as Json).body as Json).choices as Json[])[0]?.message)).toEqual(
      texts.map((t) => ({ role: 'assistant', content: `echo ${t}` })),
    );
  });

  it('fails a batch with every bad line in errors.data (1-based) and in an error file, and runs none of them', async () => {
    const fileId = await upload([
      chatLine('ok'),
      chatLine('e', {}, '/v1/embeddings'),
      chatLine('t', { temperature: 5 }),
      chatLine('s', { stream: true }),
      chatLine('ok2'),
    ]);
    const created = await createOk(fileId);
    await driver().idle();
    const b = await get(created.id);
    expect(b.status).toBe('failed');
    expect(b.failed_at).toBe(Math.floor(START / 1000));
    expect(b.in_progress_at).toBeNull();
    const problems = [
      { code: 'mismatched_endpoint', message: expect.stringContaining('/v1/embeddings'), param: 'url', line: 2 },
      { code: 'invalid_request', message: expect.stringContaining('temperature'), param: 'body.temperature', line: 3 },
      { code: 'invalid_request', message: 'A batch line cannot stream.', param: 'body.stream', line: 4 },
    ];
    expect(b.errors?.data).toEqual(problems);
    // Every line is in the error file, in order: the bad ones with their entry, the others not run.
    expect(b).toMatchObject({ output_file_id: null, error_file_id: expect.stringMatching(/^file-/), request_counts: { total: 5, completed: 0, failed: 5 } });
    const notRun = (line: number) => ({ code: 'batch_failed', message: expect.stringContaining('failed validation'), param: null, line });
    expect(parse(await content(b.error_file_id))).toEqual(
      [notRun(1), ...problems, notRun(5)].map((error, i) => ({
        id: expect.stringMatching(/^batch_req_/),
        custom_id: ['ok', 'e', 't', 's', 'ok2'][i],
        response: null,
        error,
      })),
    );
    expect(mock.calls.size).toBe(0);
  });

  it('refuses bad create bodies with a 400 naming the field', async () => {
    const fileId = await upload([chatLine('x')]);
    const tune = await upload([JSON.stringify({ messages: [] })], 'fine-tune');
    const base = { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: 'immediate' };
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const cases: Array<[Json, number, string]> = [
      [{ ...base, metadata: many }, 400, 'metadata'],
      [{ ...base, metadata: { ['k'.repeat(65)]: 'v' } }, 400, `metadata.${'k'.repeat(65)}`],
      [{ ...base, metadata: { k: 'v'.repeat(513) } }, 400, 'metadata.k'],
      [{ ...base, completion_window: '1h' }, 400, 'completion_window'],
      [{ ...base, input_file_id: 'file-nope' }, 404, 'input_file_id'],
      [{ ...base, input_file_id: tune }, 400, 'input_file_id'],
      [{ ...base, endpoint: '/v1/images/generations' }, 400, 'endpoint'],
    ];
    for (const [body, status, param] of cases) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    }
    const unknown = await fetch(`${gw.url}/v1/batches/batch_nope`, { headers: { 'x-gw-api-key': key } });
    expect(unknown.status).toBe(404);
    // Another workspace sees none of this workspace's batches.
    const mine = await createOk(fileId);
    await driver().idle();
    const ws = await gw.admin('POST', '/v1/workspaces', { name: 'Elsewhere', slug: 'elsewhere' });
    const other = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'other', workspace_id: ws.json.id, scopes: ['completions.write'] });
    const otherKey = { 'x-gw-api-key': other.json.key as string };
    expect((await fetch(`${gw.url}/v1/batches/${mine.id}`, { headers: otherKey })).status).toBe(404);
    expect((await fetch(`${gw.url}/v1/batches/${mine.id}/output`, { headers: otherKey })).status).toBe(404);
    expect((await fetch(`${gw.url}/v1/batches/${mine.id}/cancel`, { method: 'POST', headers: otherKey })).status).toBe(404);
    expect(((await (await fetch(`${gw.url}/v1/batches`, { headers: otherKey })).json()) as { data: unknown[] }).data).toEqual([]);
    const badLimit = await fetch(`${gw.url}/v1/batches?limit=0`, { headers: { 'x-gw-api-key': key } });
    expect(((await badLimit.json()) as { error: { param: string } }).error.param).toBe('limit');
  });

  it('cancels: no new line starts once cancelling is seen, finished lines stay in the output', async () => {
    let release!: () => void;
    mock.gate = new Promise<void>((r) => (release = r));
    const fileId = await upload(ids(30).map((id) => chatLine(id)));
    const created = await createOk(fileId);
    await mock.held(4);
    const res = await fetch(`${gw.url}/v1/batches/${created.id}/cancel`, { method: 'POST', headers: { 'x-gw-api-key': key } });
    expect(((await res.json()) as BatchObject).status).toBe('cancelling');
    // Past the runner's status refresh (1 s), well inside the 10 s promised.
    clock.advance(1500);
    release();
    await driver().idle();
    const b = await get(created.id);
    expect(b).toMatchObject({
      status: 'cancelled',
      cancelling_at: Math.floor(START / 1000),
      cancelled_at: Math.floor(START / 1000) + 1,
      request_counts: { total: 30, completed: 4, failed: 26 },
    });
    expect([...mock.calls.values()].reduce((a, n) => a + n, 0)).toBe(4);
    expect(customIds(await content(b.output_file_id))).toEqual(ids(4));
    const errors = parse(await content(b.error_file_id));
    expect(errors.map((l) => l.custom_id)).toEqual(ids(30).slice(4));
    expect(errors[0]).toEqual({
      id: expect.stringMatching(/^batch_req_/),
      custom_id: 'l4',
      response: null,
      error: { code: 'batch_cancelled', message: 'This request was not executed because the batch was cancelled.' },
    });
    const again = await fetch(`${gw.url}/v1/batches/${created.id}/cancel`, { method: 'POST', headers: { 'x-gw-api-key': key } });
    expect(again.status).toBe(200);
  });

  it('expires when the completion window elapses: unrun lines get batch_expired', async () => {
    let release!: () => void;
    mock.gate = new Promise<void>((r) => (release = r));
    const created = await createOk(await upload(ids(10).map((id) => chatLine(id))));
    await mock.held(4);
    clock.advance(24 * 3600 * 1000 + 1000);
    release();
    await driver().idle();
    const b = await get(created.id);
    expect(b).toMatchObject({
      status: 'expired',
      expired_at: Math.floor(START / 1000) + 24 * 3600 + 1,
      request_counts: { total: 10, completed: 4, failed: 6 },
    });
    const errors = parse(await content(b.error_file_id));
    expect(errors.map((l) => l.custom_id)).toEqual(ids(10).slice(4));
    expect(errors[0]!.error).toEqual({ code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' });
    const done = await fetch(`${gw.url}/v1/batches/${created.id}/cancel`, { method: 'POST', headers: { 'x-gw-api-key': key } });
    expect(done.status).toBe(409);
  });

  it('resumes after a crash mid-batch: lines in flight run once more, and a line in flight at a second crash is reported interrupted', async () => {
    let release!: () => void;
    mock.gate = new Promise<void>((r) => (release = r));
    const created = await createOk(await upload(ids(20).map((id) => chatLine(id))));
    await mock.held(4);
    await driver().abort();
    release();

    // Another instance of the service on the same table, data directory and key: the restart. It
    // runs the 4 interrupted lines first (they come first in the file) and crashes with them in flight.
    const instance = () => createTestDepsOn(gw.deps.config.tableName, { GW_BLOB_DIR: gw.deps.config.blobDir as string }, { clock, cipher: gw.deps.cipher });
    const second = instance();
    mock.gate = new Promise<void>((r) => (release = r));
    expect(await (second.batchRunner as LocalBatchDriver).resume()).toContain(created.id);
    await mock.held(4);
    await (second.batchRunner as LocalBatchDriver).abort();
    release();
    mock.gate = undefined;
    second.upstream.close();

    const third = instance();
    const restarted = third.batchRunner as LocalBatchDriver;
    expect(await restarted.resume()).toContain(created.id);
    await restarted.idle();
    third.upstream.close();

    const b = await get(created.id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 20, completed: 16, failed: 4 } });
    // Interrupted twice: sent twice, never a third time; every other line once.
    expect(Object.fromEntries(mock.calls)).toEqual(Object.fromEntries(ids(20).map((id, i) => [id, i < 4 ? 2 : 1])));
    const out = customIds(await content(b.output_file_id));
    const errors = parse(await content(b.error_file_id));
    expect(out).toEqual(ids(20).slice(4));
    expect(errors.map((l) => l.custom_id)).toEqual(ids(4));
    expect(errors.map((l) => (l.error as Json).code)).toEqual(['request_interrupted', 'request_interrupted', 'request_interrupted', 'request_interrupted']);
    expect(b.usage.total_tokens).toBe(16 * USAGE.total_tokens);
  });

  it('stops gracefully (shutdown): lines in flight are recorded, and a resume finishes the batch with none interrupted', async () => {
    let release!: () => void;
    mock.gate = new Promise<void>((r) => (release = r));
    const created = await createOk(await upload(ids(12, 'g').map((id) => chatLine(id))));
    await mock.held(4);
    const stopping = driver().stop();
    release();
    await stopping;
    mock.gate = undefined;
    expect((await get(created.id)).status).toBe('in_progress');
    expect(await driver().resume()).toContain(created.id);
    await driver().idle();
    const b = await get(created.id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 12, completed: 12, failed: 0 } });
    expect(customIds(await content(b.output_file_id))).toEqual(ids(12, 'g'));
    expect([...mock.calls.values()].every((n) => n === 1)).toBe(true);
  });

  it("keeps the caller's keys out of the table: the captured headers are encrypted", async () => {
    const created = await createOk(await upload([chatLine('secret-check')]));
    await driver().idle();
    const items = JSON.stringify(await scanTable(gw.deps.repos.table));
    expect(items).toContain(created.id);
    expect(items).not.toContain('sk-provider-secret');
    expect(items).not.toContain(key);
  });

  it('applies a rate limit and a guardrail to each line', async () => {
    const res = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'limited', workspace_id: 'default', scopes: ['completions.write'] });
    const limited = { id: res.json.id as string, key: res.json.key as string };
    const policy = await gw.admin('POST', '/v1/policies/rate-limits', {
      conditions: [{ key: 'api_key', value: limited.id }],
      group_by: [{ key: 'api_key' }],
      workspace_id: 'default',
      type: 'requests',
      unit: 'rpm',
      value: 2,
    });
    expect(policy.status).toBe(200);
    const fileId = await upload(ids(4, 'r').map((id) => chatLine(id)));
    const created = await createOk(fileId, providerHeaders({ 'x-gw-api-key': limited.key }));
    await driver().idle();
    const b = await get(created.id);
    expect(b.request_counts).toEqual({ total: 4, completed: 2, failed: 2 });
    const refused = parse(await content(b.error_file_id));
    expect(refused.map((l) => (l.response as Json).status_code)).toEqual([429, 429]);
    expect([...mock.calls.values()].reduce((a, n) => a + n, 0)).toBe(2);

    const config = {
      provider: 'openai',
      api_key: 'sk-x',
      custom_host: `${mock.url}/v1`,
      input_guardrails: [{ 'default.contains': { operator: 'none', words: ['forbidden'] }, deny: true }],
    };
    const guarded = await createOk(await upload([chatLine('fine'), chatLine('forbidden')]), { 'x-gw-api-key': key, 'x-gw-config': JSON.stringify(config) });
    await driver().idle();
    const g = await get(guarded.id);
    expect(g.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    const [denied] = parse(await content(g.error_file_id));
    expect(denied).toMatchObject({ custom_id: 'forbidden', response: { status_code: 446 }, error: null });
    expect(mock.calls.get('forbidden')).toBeUndefined();
  });
});

describe('429 back-off', () => {
  let gw: TestGantry;
  let mock: MockBatchProvider;
  const clock = new ManualClock(START);

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry('direct', {}, { clock }), startMockBatchProvider({ maxConcurrent: 3, delayMs: 5 })]);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('halves its window on 429s, waits, and still answers every line exactly once', async () => {
    const key = await gw.workspaceKey();
    const form = new FormData();
    form.append(
      'file',
      new Blob([
        ids(40)
          .map((id) => chatLine(id))
          .join('\n'),
      ]),
      'in.jsonl',
    );
    form.append('purpose', 'batch');
    const file = (await (await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { 'x-gw-api-key': key }, body: form })).json()) as { id: string };
    const headers = {
      'x-gw-api-key': key,
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${mock.url}/v1`,
      authorization: 'Bearer sk-x',
      'content-type': 'application/json',
    };
    const res = await fetch(`${gw.url}/v1/batches`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' }),
    });
    const created = (await res.json()) as BatchObject;
    await (gw.deps.batchRunner as LocalBatchDriver).idle();
    const b = (await (await fetch(`${gw.url}/v1/batches/${created.id}`, { headers: { 'x-gw-api-key': key } })).json()) as BatchObject;
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 40, completed: 40, failed: 0 } });
    expect(mock.throttled).toBeGreaterThan(0);
    // Backoff waits on the clock: 100 ms, doubled for each 429 in a row (of 429s that come together, the longest wait is kept).
    expect(clock.sleeps.length).toBeGreaterThan(0);
    expect(clock.sleeps.every((ms) => [100, 200, 400, 800, 1600, 3200, 5000].includes(ms))).toBe(true);
    expect(mock.peak).toBeLessThanOrEqual(3);
    const answered = [...mock.calls.values()].reduce((a, n) => a + n, 0);
    expect(answered - mock.throttled).toBe(40);
  });
});

describe("a provider's own batches (completion_window 24h with a provider named)", () => {
  let gw: TestGantry;
  let key: string;
  const statuses: Record<string, string> = { batch_run: 'RUNNING', batch_ok: 'SUCCESS', batch_stop: 'canceling', batch_plain: 'in_progress' };

  beforeAll(async () => {
    gw = await startGantry('direct');
    key = await gw.workspaceKey();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('passes create through to the provider and maps its statuses onto the batch states of the contract on retrieve', async () => {
    const provider = await startMockServer((req) => {
      const id = req.path.split('/')[3] ?? '';
      if (req.method === 'POST' && req.path === '/v1/batches')
        return {
          json: { id: 'batch_run', object: 'batch', status: 'VALIDATING', input_file_id: 'file-p', endpoint: '/v1/chat/completions', completion_window: '24h' },
        };
      return { json: { id, object: 'batch', status: statuses[id], endpoint: '/v1/chat/completions' } };
    });
    try {
      const headers = {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${provider.url}/v1`,
        authorization: 'Bearer sk-x',
        'content-type': 'application/json',
      };
      const created = await fetch(`${gw.url}/v1/batches`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ input_file_id: 'file-p', endpoint: '/v1/chat/completions', completion_window: '24h' }),
      });
      expect(await created.json()).toMatchObject({ id: 'batch_run', status: 'validating', provider_status: 'VALIDATING' });
      expect(provider.received[0]).toMatchObject({ method: 'POST', path: '/v1/batches' });
      const got = async (id: string) => (await fetch(`${gw.url}/v1/batches/${id}`, { headers })).json() as Promise<Json>;
      expect(await got('batch_run')).toMatchObject({ status: 'in_progress', provider_status: 'RUNNING' });
      expect(await got('batch_ok')).toMatchObject({ status: 'completed', provider_status: 'SUCCESS' });
      expect(await got('batch_stop')).toMatchObject({ status: 'cancelling', provider_status: 'canceling' });
      const plain = await got('batch_plain');
      expect(plain.status).toBe('in_progress');
      expect(plain).not.toHaveProperty('provider_status');
    } finally {
      await provider.close();
    }
  });
});
