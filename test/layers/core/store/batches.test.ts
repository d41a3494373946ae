/**
 * The batch line records (store/batches.ts) written many lines at a time, against DynamoDB Local:
 * claims and answers go in transactions of up to 100 lines (and under 4 MB), and a line that
 * another runner holds fails alone, so of two runners only one claims a line and a stale runner's
 * answer is never recorded over the current one.
 */
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { BatchRepository, type BatchLineRecord, type LineClaim, type LineOutcome } from '../../../../layers/core/src/store/batches.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { startTableProxy, type TableProxy } from '../../../support/table-proxy.ts';

let deps: CoreDeps;
let proxy: TableProxy;
let repo: BatchRepository;

beforeAll(async () => {
  proxy = await startTableProxy(inject('dynamodbEndpoint'));
  deps = await createTestDeps({ DYNAMODB_ENDPOINT: proxy.url, GW_REQUEST_LOGS: 'OFF' });
  repo = new BatchRepository(deps.repos.table);
});
afterAll(async () => {
  deps?.upstream.close();
  await proxy?.close();
});

let batches = 0;
const lines = (n: number, from = 0): { batchId: string; claims: LineClaim[] } => {
  const batchId = `batch_store${batches++}`;
  return { batchId, claims: Array.from({ length: n }, (_, i) => ({ line: { batch_id: batchId, index: from + i, custom_id: `c${from + i}` } })) };
};

const answer = (body = '{"ok":true}'): LineOutcome => ({
  status_code: 200,
  response_request_id: 'log-1',
  body,
  input_tokens: 9,
  output_tokens: 3,
  cached_tokens: 0,
  reasoning_tokens: 0,
  cost_micros: 5,
});

/** Requests the proxy forwarded for `fn`, by operation. */
async function requestsOf(fn: () => Promise<unknown>): Promise<Record<string, number>> {
  proxy.counts.clear();
  await fn();
  return Object.fromEntries(proxy.counts);
}

describe('batch line claims, many at a time', () => {
  it('claims 250 fresh lines with three transactions (100 lines each at most), each line running once', async () => {
    const { batchId, claims } = lines(250);
    let claimed: Array<BatchLineRecord | undefined> = [];
    expect(await requestsOf(async () => (claimed = await repo.claimAll(claims)))).toEqual({ TransactWriteItems: 3 });
    expect(claimed.every((r, i) => r?.index === i && r.state === 'running' && r.attempts === 1)).toBe(true);
    expect(new Set(claimed.map((r) => r?.request_id)).size).toBe(250);
    const stored = await repo.lines(batchId, 0, 250);
    expect(stored.map((r) => [r.index, r.state, r.attempts])).toEqual(claimed.map((r) => [r?.index, 'running', 1]));
  });

  it('leaves out only the lines another runner claimed first; the rest of the group is claimed', async () => {
    const { batchId, claims } = lines(10);
    // The other runner holds lines 3 and 7.
    expect((await repo.claimAll([claims[3]!, claims[7]!])).every(Boolean)).toBe(true);
    const mine = await repo.claimAll(claims);
    expect(mine.map((r) => r !== undefined)).toEqual([true, true, true, false, true, true, true, false, true, true]);
    // Claimed once each: the lines the other runner holds keep its records.
    const stored = await repo.lines(batchId, 0, 10);
    expect(stored.map((r) => r.attempts)).toEqual(Array(10).fill(1));
  });

  it('claims a line again only as it was read: a stale previous record claims nothing', async () => {
    const { claims } = lines(2);
    const [a, b] = await repo.claimAll(claims);
    await repo.release(a!);
    const again = await repo.claimAll([
      { line: claims[0]!.line, previous: { ...a!, state: 'throttled' } },
      // Read before it was claimed: someone else ran it meanwhile.
      { line: claims[1]!.line, previous: undefined },
    ]);
    expect(again[0]).toMatchObject({ state: 'running', attempts: 2, request_id: a!.request_id });
    expect(again[1]).toBeUndefined();
    expect(b).toBeDefined();
  });
});

describe('batch line answers, many at a time', () => {
  it('records 150 answers with two transactions; each line done once with its answer', async () => {
    const { batchId, claims } = lines(150);
    const claimed = (await repo.claimAll(claims)) as BatchLineRecord[];
    let recorded: boolean[] = [];
    const requests = await requestsOf(async () => (recorded = await repo.completeAll(claimed.map((rec) => ({ rec, out: answer(`{"line":${rec.index}}`) })))));
    expect(requests).toEqual({ TransactWriteItems: 2 });
    expect(recorded).toEqual(Array(150).fill(true));
    const stored = await repo.lines(batchId, 0, 150);
    expect(stored.every((r, i) => r.state === 'done' && r.body === `{"line":${i}}` && r.input_tokens === 9)).toBe(true);
  });

  it('splits answers too large for one transaction (4 MB): 14 answers of 290 KB are all recorded', async () => {
    const { batchId, claims } = lines(14);
    const claimed = (await repo.claimAll(claims)) as BatchLineRecord[];
    const big = (i: number) => JSON.stringify({ line: i, text: 'x'.repeat(290_000) });
    let recorded: boolean[] = [];
    const requests = await requestsOf(async () => (recorded = await repo.completeAll(claimed.map((rec) => ({ rec, out: answer(big(rec.index)) })))));
    expect(requests.TransactWriteItems).toBeGreaterThan(1);
    expect(recorded).toEqual(Array(14).fill(true));
    const stored = await repo.lines(batchId, 0, 14);
    expect(stored.map((r) => r.body)).toEqual(claimed.map((r) => big(r.index)));
  });

  it("never records a stale runner's answer: only the line claimed anew by another run is refused, the others are recorded", async () => {
    const { batchId, claims } = lines(5);
    const first = (await repo.claimAll(claims)) as BatchLineRecord[];
    // Line 2 was found running by a new run, which claimed it again and recorded its own answer.
    const [rerun] = await repo.claimAll([{ line: claims[2]!.line, previous: first[2] }]);
    expect(rerun).toMatchObject({ attempts: 2, reruns: 1 });
    expect(await repo.completeAll([{ rec: rerun!, out: answer('"the rerun"') }])).toEqual([true]);
    const recorded = await repo.completeAll(first.map((rec) => ({ rec, out: answer('"the first run"') })));
    expect(recorded).toEqual([true, true, false, true, true]);
    const stored = await repo.lines(batchId, 0, 5);
    expect(stored.map((r) => r.body)).toEqual(['"the first run"', '"the first run"', '"the rerun"', '"the first run"', '"the first run"']);
    // A second write of the same answers (a worker that did not know the first went through) records nothing twice.
    expect(await repo.completeAll(first.map((rec) => ({ rec, out: answer('"again"') })))).toEqual([false, false, false, false, false]);
  });

  it('throws when the table refuses the write, recording none of its answers (the lines stay running)', async () => {
    const { batchId, claims } = lines(3);
    const claimed = (await repo.claimAll(claims)) as BatchLineRecord[];
    proxy.refuse = (req) => req.operation === 'TransactWriteItems';
    try {
      await expect(repo.completeAll(claimed.map((rec) => ({ rec, out: answer() })))).rejects.toMatchObject({ name: 'InternalServerError' });
    } finally {
      proxy.refuse = undefined;
    }
    expect((await repo.lines(batchId, 0, 3)).map((r) => r.state)).toEqual(['running', 'running', 'running']);
  });
});

describe('chunk runs: one write claims a window of new lines', () => {
  it('a run takes the chunk with a new epoch and its mark; the run it took over can start no more lines', async () => {
    const { batchId } = lines(0);
    const first = await repo.takeRun(batchId, 1000);
    expect(first).toMatchObject({ batch_id: batchId, start: 1000, epoch: 1, started: 1000 });
    expect(await repo.advance(first, 1064)).toBe(true);
    expect(first.started).toBe(1064);
    // A second run (a retried chunk) takes it over: it sees how far the first got.
    const second = await repo.takeRun(batchId, 1000);
    expect(second).toMatchObject({ epoch: 2, started: 1064 });
    expect(await repo.advance(first, 1128)).toBe(false);
    expect(first.started).toBe(1064);
    expect(await repo.advance(second, 1100)).toBe(true);
    // The mark never goes back, and other chunks have marks of their own.
    expect(await repo.advance(second, 1090)).toBe(false);
    await repo.takeRun(batchId, 0);
    expect((await repo.runs(batchId)).map((r) => [r.start, r.started])).toEqual([
      [0, 0],
      [1000, 1100],
    ]);
    // The marks are not line records.
    expect(await repo.lines(batchId, 0, 2000)).toEqual([]);
  });

  it("records fresh lines' answers without a condition, packed (one answer a line whichever run wrote); a lost line is claimed again once", async () => {
    const { batchId, claims } = lines(3);
    const fresh = claims.map((c) => ({ ...c.line, state: 'running' as const, attempts: 1, request_id: `batch_req_${c.line.index}` }));
    // Line 1 was lost by this run (a new run found it started and unrecorded) and claimed again there.
    const [again] = await repo.claimAll([{ line: claims[1]!.line, lost: true }]);
    expect(again).toMatchObject({ state: 'running', attempts: 1, reruns: 1 });
    expect(await repo.claimAll([{ line: claims[1]!.line, lost: true }])).toEqual([undefined]);
    // The first run, still alive, packs its answers (one item): line 1 now reads answered, though the
    // new run's claim is still running.
    const requests = await requestsOf(async () =>
      expect(await repo.completeAll(fresh.map((rec) => ({ rec, out: answer('"first"'), fresh: true })))).toEqual([true, true, true]),
    );
    expect(requests).toEqual({ BatchWriteItem: 1 });
    expect((await repo.lines(batchId, 0, 3)).map((r) => [r.state, r.body])).toEqual([
      ['done', '"first"'],
      ['done', '"first"'],
      ['done', '"first"'],
    ]);
    // The new run records its answer too: the line still reads one answer, the record's.
    expect(await repo.completeAll([{ rec: again!, out: answer('"again"') }])).toEqual([true]);
    expect((await repo.lines(batchId, 0, 3)).map((r) => [r.index, r.body])).toEqual([
      [0, '"first"'],
      [1, '"again"'],
      [2, '"first"'],
    ]);
    // A 429 gives a fresh line a record to be run again from, unless a run that took the chunk over
    // has claimed the line since (it found the line started and unrecorded).
    const { claims: more } = lines(2);
    const [a, b] = more.map((c) => ({ ...c.line, state: 'running' as const, attempts: 1, request_id: 'batch_req_x' }));
    await repo.claimAll([{ line: more[1]!.line, lost: true }]);
    expect(await repo.release(a!, true)).toBe(true);
    expect(await repo.release(b!, true)).toBe(false);
    expect((await repo.lines(a!.batch_id, 0, 2)).map((r) => r.state)).toEqual(['throttled', 'running']);
  });

  it('packs small answers per chunk, many to an item, and gives a large one a record of its own; reads merge them in line order', async () => {
    const { batchId, claims } = lines(150, 900);
    const recs = claims.map((c) => ({ ...c.line, state: 'running' as const, attempts: 1, request_id: `batch_req_${c.line.index}` }));
    const big = 'x'.repeat(20_000);
    const out = (i: number) => answer(i === 950 ? JSON.stringify(big) : `{"line":${i}}`);
    let items = 0;
    proxy.observe = (req) => {
      if (req.operation === 'BatchWriteItem')
        items += Object.values((JSON.parse(req.body) as { RequestItems: Record<string, unknown[]> }).RequestItems).flat().length;
    };
    try {
      expect(await repo.completeAll(recs.map((rec) => ({ rec, out: out(rec.index), fresh: true })))).toEqual(Array(150).fill(true));
    } finally {
      proxy.observe = undefined;
    }
    // Lines 900-999 and 1000-1049 are two chunks: a pack each, and line 950's own record.
    expect(items).toBe(3);
    const stored = await repo.lines(batchId, 0, 2000);
    expect(stored.map((r) => r.index)).toEqual(recs.map((r) => r.index));
    expect(stored.every((r) => r.state === 'done' && r.batch_id === batchId)).toBe(true);
    expect(stored[50]!.body).toBe(JSON.stringify(big));
    expect(stored[149]!.body).toBe('{"line":1049}');
    // A range inside a chunk reads only its lines.
    expect((await repo.lines(batchId, 990, 1010)).map((r) => r.index)).toEqual(Array.from({ length: 20 }, (_, i) => 990 + i));
  });

  it('keeps each pack under the item limit in bytes: 100 answers of 16,000 three-byte characters are all recorded', async () => {
    const { batchId, claims } = lines(100);
    const recs = claims.map((c) => ({ ...c.line, state: 'running' as const, attempts: 1, request_id: `batch_req_${c.line.index}` }));
    const body = (i: number) => JSON.stringify(`${i}:${'中'.repeat(16_000)}`);
    expect(await repo.completeAll(recs.map((rec) => ({ rec, out: answer(body(rec.index)), fresh: true })))).toEqual(Array(100).fill(true));
    expect((await repo.lines(batchId, 0, 100)).map((r) => r.body)).toEqual(recs.map((r) => body(r.index)));
  });
});
