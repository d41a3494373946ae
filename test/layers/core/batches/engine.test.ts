/**
 * The batch engine's chunk runs (batches/engine.ts) writing line records many lines at a time, on
 * DynamoDB Local behind a proxy that counts and refuses requests, against a real HTTP mock
 * provider: a chunk claims its new lines by moving its mark (a write per window, no record per line)
 * and records their answers with a few writes, not one per line; an answer
 * write that fails fails the chunk, and its next run runs those lines once more and nothing else
 * twice; two runners on the same chunk run each line once between them. In every case each line
 * ends in the output once and the batch's counts equal its lines.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, inject } from 'vitest';
import { finalizeBatch, runChunk, startBatch, type BatchChunk } from '../../../../layers/core/src/batches/engine.ts';
import { LocalBatchDriver } from '../../../../layers/core/src/batches/local-driver.ts';
import type { BatchObject } from '../../../../layers/core/src/batches/object.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { BatchRepository } from '../../../../layers/core/src/store/batches.ts';
import { createTestDepsOn } from '../../../support/deps.ts';
import { startGantry, type TestGantry } from '../../../support/gantry.ts';
import { startMockBatchProvider, type MockBatchProvider } from '../../../support/mock-batch-provider.ts';
import { startTableProxy, type TableProxy } from '../../../support/table-proxy.ts';

let gw: TestGantry;
let mock: MockBatchProvider;
let proxy: TableProxy;
let key: string;
const env = () => ({ GW_REQUEST_LOGS: 'OFF' });

beforeAll(async () => {
  proxy = await startTableProxy(inject('dynamodbEndpoint'));
  // The test runs the engine's steps itself: the runner started on create does nothing.
  [gw, mock] = await Promise.all([
    startGantry('direct', { ...env(), DYNAMODB_ENDPOINT: proxy.url }, { batchRunner: () => ({ start: async () => undefined }) }),
    startMockBatchProvider(),
  ]);
  key = await gw.workspaceKey();
});
afterAll(async () => {
  await Promise.all([gw?.close(), mock?.close()]);
  await proxy?.close();
});
beforeEach(() => {
  mock.calls.clear();
  proxy.refuse = undefined;
});

const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/** A batch of one line per id, validated: its chunks. */
async function createBatch(lines: string[]): Promise<{ id: string; chunks: BatchChunk[] }> {
  const jsonl = lines.map((id) =>
    JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] } }),
  );
  const form = new FormData();
  form.append('file', new Blob([`${jsonl.join('\n')}\n`]), 'in.jsonl');
  form.append('purpose', 'batch');
  const file = (await (await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { 'x-gw-api-key': key }, body: form })).json()) as { id: string };
  const res = await fetch(`${gw.url}/v1/batches`, {
    method: 'POST',
    headers: {
      'x-gw-api-key': key,
      'x-gw-provider': 'openai',
      'x-gw-custom-host': `${mock.url}/v1`,
      authorization: 'Bearer sk-x',
      'content-type': 'application/json',
    },
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: 'immediate' }),
  });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  const started = await startBatch(gw.deps, id);
  expect(started.status).toBe('in_progress');
  return { id, chunks: started.chunks };
}

/** The custom ids of a finished batch's output file, in order. */
async function output(b: BatchObject): Promise<string[]> {
  const text = await (await fetch(`${gw.url}/v1/files/${String(b.output_file_id)}/content`, { headers: { 'x-gw-api-key': key } })).text();
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
}

const recordsOf = async (deps: CoreDeps, id: string, n: number) => new BatchRepository(deps.repos.table).lines(id, 0, n);

/** A write that records a line's answer (a `done` line record, alone, in a transaction or in a batch, or a pack of answers). */
const recordsAnswer = (req: { operation: string; body: string }) =>
  ['TransactWriteItems', 'PutItem', 'BatchWriteItem'].includes(req.operation) && (req.body.includes('"state":{"S":"done"}') || req.body.includes('PACK#'));

/** Items a write request carries (a put, each of a transaction's, each of a batch's). */
const itemsOf = (req: { operation: string; body: string }): number => {
  const body = JSON.parse(req.body) as { TransactItems?: unknown[]; RequestItems?: Record<string, unknown[]> };
  return req.operation === 'PutItem' ? 1 : (body.TransactItems?.length ?? Object.values(body.RequestItems ?? {}).flat().length);
};

describe('a chunk run', () => {
  it('claims and records 300 lines with a few writes of many lines each, every line called and counted once', async () => {
    const lines = ids(300, 'w');
    const { id, chunks } = await createBatch(lines);
    proxy.counts.clear();
    let items = 0;
    proxy.observe = (req) => {
      if (['TransactWriteItems', 'PutItem', 'BatchWriteItem'].includes(req.operation)) items += itemsOf(req);
    };
    expect(await runChunk(gw.deps, id, chunks[0]!)).toEqual({ ran: 300, skipped: 0, throttled: 0 });
    proxy.observe = undefined;
    // A put per claim and a put per answer would be 600 items; claims write none, and answers go
    // many to an item (a pack of up to 100).
    expect(items).toBeLessThanOrEqual(12);
    expect(proxy.counts.get('TransactWriteItems') ?? 0).toBe(0);
    expect((await recordsOf(gw.deps, id, 300)).map((r) => [r.custom_id, r.state])).toEqual(lines.map((cid) => [cid, 'done']));
    const b = await finalizeBatch(gw.deps, id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 300, completed: 300, failed: 0 } });
    expect(await output(b)).toEqual(lines);
    expect([...mock.calls.values()]).toEqual(Array(300).fill(1));
  });

  it('fails when a write of answers fails; its next run runs the lines of that write once more and no other line twice', async () => {
    const lines = ids(200, 'f');
    const { id, chunks } = await createBatch(lines);
    // The first write of answers goes through; every later one is refused.
    let answerWrites = 0;
    proxy.refuse = (req) => recordsAnswer(req) && ++answerWrites > 1;
    await expect(runChunk(gw.deps, id, chunks[0]!)).rejects.toThrow(/answers could not be written/);
    proxy.refuse = undefined;

    const after = await recordsOf(gw.deps, id, 200);
    const done = new Set(after.filter((r) => r.state === 'done').map((r) => r.custom_id));
    expect(after.length).toBe(done.size);
    expect(done.size).toBeGreaterThan(0);
    // Answered, but the answer was not recorded: not lost, the chunk's mark says the line was started.
    const [mark] = await new BatchRepository(gw.deps.repos.table).runs(id);
    const running = new Set(lines.filter((cid, i) => !done.has(cid) && i < mark!.started));
    // The lines not started when the chunk failed were never called.
    expect(lines.filter((cid, i) => i >= mark!.started).every((cid) => !mock.calls.has(cid))).toBe(true);
    expect(running.size).toBeGreaterThan(0);
    expect([...running].every((cid) => mock.calls.get(cid) === 1)).toBe(true);

    expect(await runChunk(gw.deps, id, chunks[0]!)).toMatchObject({ skipped: done.size });
    const b = await finalizeBatch(gw.deps, id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 200, completed: 200, failed: 0 } });
    expect(await output(b)).toEqual(lines);
    expect(Object.fromEntries(mock.calls)).toEqual(Object.fromEntries(lines.map((cid) => [cid, running.has(cid) ? 2 : 1])));
    expect((await recordsOf(gw.deps, id, 200)).filter((r) => r.reruns === 1).map((r) => r.custom_id)).toEqual([...running]);
  });

  it('records each line once between two runners of the same chunk (a retried chunk while the first still runs)', async () => {
    const lines = ids(250, 't');
    const { id, chunks } = await createBatch(lines);
    const other = createTestDepsOn(
      gw.deps.config.tableName,
      { ...env(), DYNAMODB_ENDPOINT: proxy.url, GW_BLOB_DIR: gw.deps.config.blobDir as string },
      { cipher: gw.deps.cipher },
    );
    try {
      // Both find the lines unclaimed and claim the same groups: each line goes to one of them.
      await Promise.all([runChunk(gw.deps, id, chunks[0]!), runChunk(other, id, chunks[0]!)]);
    } finally {
      other.upstream.close();
    }
    const b = await finalizeBatch(gw.deps, id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 250, completed: 250, failed: 0 } });
    expect(await output(b)).toEqual(lines);
    // A runner that finds a line in flight takes it for interrupted and runs it once more (never a third
    // time); only one answer is recorded. Every other line reached the provider once.
    const rerun = new Set((await recordsOf(gw.deps, id, 250)).filter((r) => r.reruns === 1).map((r) => r.custom_id));
    expect(Object.fromEntries(mock.calls)).toEqual(Object.fromEntries(lines.map((cid) => [cid, rerun.has(cid) ? 2 : 1])));
  });

  it('reports the lines a stopped run started and never recorded as interrupted when the batch is cancelled, the others as cancelled', async () => {
    const lines = ids(40, 'c');
    const { id, chunks } = await createBatch(lines);
    let open = () => {};
    mock.gate = new Promise<void>((resolve) => (open = resolve));
    const stop = new AbortController();
    const run = runChunk(gw.deps, id, chunks[0]!, { signal: stop.signal });
    try {
      // The first window is in flight when the worker stops (a crash).
      await mock.held(4);
      stop.abort();
    } finally {
      mock.gate = undefined;
      open();
    }
    await run.catch(() => undefined);
    const repo = new BatchRepository(gw.deps.repos.table);
    const [mark] = await repo.runs(id);
    expect(mark!.started).toBe(4);
    expect(await repo.lines(id, 0, 40)).toEqual([]);
    expect(await repo.transition(id, ['in_progress'], 'cancelling')).toBe(true);
    const b = await finalizeBatch(gw.deps, id);
    expect(b).toMatchObject({ status: 'cancelled', output_file_id: null, request_counts: { total: 40, completed: 0, failed: 40 } });
    const text = await (await fetch(`${gw.url}/v1/files/${String(b.error_file_id)}/content`, { headers: { 'x-gw-api-key': key } })).text();
    const codes = text
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { error: { code: string } }).error.code);
    expect(codes).toEqual([...Array(4).fill('request_interrupted'), ...Array(36).fill('batch_cancelled')]);
  });

  it('finalizes in one pass over the records when the live counts say every line is recorded, and takes that back when the records disagree', async () => {
    const lines = ids(30, 'p');
    const { id, chunks } = await createBatch(lines);
    const repo = new BatchRepository(gw.deps.repos.table);
    const outputs = async () =>
      ((await (await fetch(`${gw.url}/v1/files?purpose=batch_output&limit=100`, { headers: { 'x-gw-api-key': key } })).json()) as { data: unknown[] }).data
        .length;
    const before = await outputs();
    // Counts ahead of the records (two runs counted the same lines): the batch stays in progress, no file is left.
    await repo.count(id, { completed: 30, failed: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, cost_micros: 0 });
    expect(await finalizeBatch(gw.deps, id)).toMatchObject({ status: 'in_progress', output_file_id: null, error_file_id: null });
    expect(await outputs()).toBe(before);

    await runChunk(gw.deps, id, chunks[0]!);
    proxy.counts.clear();
    const b = await finalizeBatch(gw.deps, id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 30, completed: 30, failed: 0 } });
    expect(b.finalizing_at).toEqual(expect.any(Number));
    expect(await output(b)).toEqual(lines);
    // The chunks' marks, and the records once: the chunk's packs and its line records (30 fit a page).
    expect(proxy.counts.get('Query')).toBe(3);
  });
});

describe('the local driver', () => {
  it('runs a batch again after a failed run (the table refusing for a while), to completed, every line once', async () => {
    const lines = ids(120, 'r');
    const { id } = await createBatch(lines);
    // The chunk's run item cannot be taken for its first six tries: several runs fail in a row.
    let refused = 0;
    proxy.refuse = (req) => req.operation === 'UpdateItem' && req.body.includes('RUN#') && ++refused <= 6;
    const driver = new LocalBatchDriver(gw.deps, { retryBaseMs: 20 });
    await driver.start(id);
    const repo = new BatchRepository(gw.deps.repos.table);
    for (let i = 0; i < 200 && (await repo.get(id))?.status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 50));
    await driver.idle();
    expect(refused).toBeGreaterThan(6);
    const b = await finalizeBatch(gw.deps, id);
    expect(b).toMatchObject({ status: 'completed', request_counts: { total: 120, completed: 120, failed: 0 } });
    expect(await output(b)).toEqual(lines);
    expect([...mock.calls.values()]).toEqual(Array(120).fill(1));
  });
});
