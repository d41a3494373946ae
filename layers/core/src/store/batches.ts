/**
 * Batches run by the gateway (`POST /v1/batches` on a held file or with `completion_window:
 * "immediate"`): the batch under its own key (BATCH#id, so a runner that only knows the id finds
 * it), listed per workspace through gsi1; per chunk of lines, the run that holds it and how far it
 * has started lines (one write claims a window of new lines); the answers of lines run for the
 * first time, packed many to an item; and a record for each other line that has one (a line run
 * again, or given back after a 429, gets its record before the call, a conditional put that
 * decides whether it may run, and keeps its answer after). Batches not yet final also have a
 * marker under BATCHES#ACTIVE, so a restarted runner finds them.
 */
import { DeleteCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand, type PutCommandInput } from '@aws-sdk/lib-dynamodb';
import { randomBytes } from 'node:crypto';
import { systemClock } from '../ports/clock.ts';
import { batchPut } from './batch-io.ts';
import { Entity, type Item } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { queryAll, queryPages } from './paginate.ts';

export type BatchStatus = 'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

export const FINAL_STATUSES: ReadonlySet<BatchStatus> = new Set(['failed', 'completed', 'expired', 'cancelled']);

/** One `errors.data` entry (docs/design/spec.md#answers-gantry-shapes: `code`, `message`, `param`, `line`, 1-based). */
export interface BatchLineError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

export interface BatchUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export type BatchTimestamp = 'in_progress_at' | 'finalizing_at' | 'completed_at' | 'failed_at' | 'expired_at' | 'cancelling_at' | 'cancelled_at';

export interface BatchRecord extends Partial<Record<BatchTimestamp, number>> {
  id: string;
  organisation_id: string;
  workspace_id: string;
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  /** Unix seconds, as are all `*_at`. */
  created_at: number;
  expires_at: number;
  errors?: BatchLineError[];
  output_file_id?: string;
  error_file_id?: string;
  total: number;
  completed: number;
  failed: number;
  input_tokens: number;
  output_tokens: number;
  /** Of the input tokens, those read from the provider's prompt cache (absent on batches from before it was kept). */
  cached_tokens?: number;
  /** Of the output tokens, those spent reasoning. */
  reasoning_tokens?: number;
  cost_micros: number;
  metadata: Record<string, string> | null;
  /** The caller's headers at create (gateway key, provider headers, config), encrypted with the cipher. */
  sealed_headers: string;
}

export const Batch = new Entity<BatchRecord>({
  name: 'Batch',
  key: (r) => ({ pk: `BATCH#${r.id}`, sk: 'BATCH' }),
  gsi1: (r) => ({ pk: `WS#${r.workspace_id}#BATCHES`, sk: r.id }),
});

interface ActiveMarker {
  id: string;
}
const ActiveBatch = new Entity<ActiveMarker>({ name: 'ActiveBatch', key: (r) => ({ pk: 'BATCHES#ACTIVE', sk: r.id }) });

export type LineState = 'running' | 'throttled' | 'done';

export interface BatchLineRecord {
  batch_id: string;
  /** 0-based index of the line in the input file. */
  index: number;
  custom_id: string;
  state: LineState;
  attempts: number;
  /** The output line's `id` (`batch_req_...`). */
  request_id: string;
  status_code?: number;
  /** The provider's (or the gateway's) request id, `response.request_id`. */
  response_request_id?: string;
  /** The answer's JSON text; absent when it was too large for the item and lives in blob storage. */
  body?: string;
  body_blob?: string;
  input_tokens?: number;
  output_tokens?: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
  cost_micros?: number;
  /**
   * How often a run found the line `running` (a worker stopped with it in flight) and ran it
   * again: at most once, so a line reaches the provider at most twice.
   */
  reruns?: number;
  /** The line got no answer (interrupted twice): its error-file line carries this and `response: null`. */
  error?: { code: string; message: string };
}

const lineSk = (index: number): string => `LINE#${String(index).padStart(9, '0')}`;

export const BatchLine = new Entity<BatchLineRecord>({
  name: 'BatchLine',
  key: (r) => ({ pk: `BATCH#${r.batch_id}`, sk: lineSk(r.index) }),
});

/**
 * A chunk's run: the run that holds the chunk (`epoch`, taken anew by every run of it) and how far
 * it has started new lines (`started`): a line of the chunk below it without a record was handed to
 * the provider by an earlier run that stopped before recording the answer, so it is run once more
 * (with a record, like a line left `running`). Claiming a window of new lines is one write of this
 * item, not a put per line.
 */
export interface ChunkRunRecord {
  batch_id: string;
  /** The chunk's first line. */
  start: number;
  epoch: number;
  /** Lines of the chunk below this index have been started (by this run or an earlier one). */
  started: number;
}

const RUN_PREFIX = 'RUN#';

export const ChunkRun = new Entity<ChunkRunRecord, 'batch_id' | 'start'>({
  name: 'BatchChunkRun',
  key: (r) => ({ pk: `BATCH#${r.batch_id}`, sk: `${RUN_PREFIX}${String(r.start).padStart(9, '0')}` }),
});

/** Lines per chunk: the unit a run (a Step Functions iteration, a Lambda invocation) runs. */
export const BATCH_CHUNK_LINES = 1000;
const chunkOf = (index: number): number => Math.floor(index / BATCH_CHUNK_LINES) * BATCH_CHUNK_LINES;

/**
 * Answers of lines run for the first time, many to an item, as one JSON text: most of DynamoDB
 * Local's cost, and part of DynamoDB's, is per item, and a line's answer is usually a few hundred
 * bytes. Keyed by chunk (`PACK#<chunk>#<id>`), so a chunk's packs are one Query. Answers larger
 * than PACK_BODY_MAX get a line record of their own, so a chunk's packs stay small enough to hold.
 */
const PACK_PREFIX = 'PACK#';
const PACK_BODY_MAX = 16_384;
const PACK_MAX_BYTES = 300_000;
type PackedLine = Omit<BatchLineRecord, 'batch_id'>;

/** `batch_` then the creation time (base 36, fixed width, so ids sort by time) and random hex. */
export function newBatchId(nowMs: number): string {
  return `batch_${nowMs.toString(36).padStart(10, '0')}${randomBytes(8).toString('hex')}`;
}

export const newBatchRequestId = (): string => `batch_req_${randomBytes(12).toString('hex')}`;

const isConditionFailure = (err: unknown): boolean => err instanceof Error && err.name === 'ConditionalCheckFailedException';
const isCancelled = (err: unknown): boolean => err instanceof Error && err.name === 'TransactionCanceledException';

/** DynamoDB's limits on one TransactWriteItems: 100 items, 4 MB in all (kept under, with room for the keys and attribute names). */
export const TRANSACT_MAX_ITEMS = 100;
const TRANSACT_MAX_BYTES = 3_000_000;

/** A line to claim, and its record as the runner read it (none: never claimed). */
export interface LineClaim {
  line: Pick<BatchLineRecord, 'batch_id' | 'index' | 'custom_id'>;
  previous?: BatchLineRecord | undefined;
  /** No record, but an earlier run started it (below its chunk's `started`): run once more. */
  lost?: boolean | undefined;
}

/** A claimed line and its answer, to record. */
export interface LineAnswer {
  rec: BatchLineRecord;
  out: LineOutcome;
  /** Claimed by its chunk's mark, so it has no record yet (see `ChunkRunRecord`). */
  fresh?: boolean | undefined;
}

type Put = Omit<PutCommandInput, 'TableName'>;

/** Splits puts into groups one transaction can hold (count and, roughly, bytes: answers can be 300 KB each). */
function transactGroups<T>(items: readonly T[], bytes: (item: T) => number, maxBytes = TRANSACT_MAX_BYTES): T[][] {
  const groups: T[][] = [];
  let group: T[] = [];
  let size = 0;
  for (const item of items) {
    const b = bytes(item);
    if (group.length > 0 && (group.length >= TRANSACT_MAX_ITEMS || size + b > maxBytes)) {
      groups.push(group);
      group = [];
      size = 0;
    }
    group.push(item);
    size += b;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/** An answer's share of a transaction's 4 MB: its body, and about 1 KB for the rest of the item. */
const answerBytes = (a: LineAnswer): number => Buffer.byteLength(a.out.body ?? '') + 1024;

export interface LineOutcome {
  /** 0 when the line got no answer (`error` says why). */
  status_code: number;
  error?: { code: string; message: string };
  response_request_id: string;
  body?: string;
  body_blob?: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost_micros: number;
}

/** The claim's record and its conditional put (see `BatchRepository.claimAll`). */
function claimPut({ line, previous, lost }: LineClaim): { rec: BatchLineRecord; put: Put } {
  const reruns = (previous?.reruns ?? 0) + (previous?.state === 'running' || lost ? 1 : 0);
  const rec: BatchLineRecord = {
    ...freshLine(line),
    attempts: (previous?.attempts ?? 0) + 1,
    request_id: previous?.request_id ?? newBatchRequestId(),
    ...(reruns > 0 ? { reruns } : {}),
  };
  const condition: Omit<Put, 'Item'> = previous
    ? {
        ConditionExpression: '#s = :s AND attempts = :n',
        ExpressionAttributeNames: { '#s': 'state' },
        ExpressionAttributeValues: { ':s': previous.state, ':n': previous.attempts },
      }
    : NO_RECORD;
  return { rec, put: { Item: BatchLine.toItem(rec), ...condition } };
}

/** A line about to run for the first time, as its chunk's mark claims it (no record written). */
export const freshLine = (line: LineClaim['line']): BatchLineRecord => ({ ...line, state: 'running', attempts: 1, request_id: newBatchRequestId() });

const NO_RECORD = { ConditionExpression: 'attribute_not_exists(pk)' } as const;

/** The answer's put, conditional on the line still being this run's claim (see `BatchRepository.complete`). */
const completePut = ({ rec, out }: LineAnswer): Put => ({
  Item: BatchLine.toItem({ ...rec, ...out, state: 'done' }),
  ConditionExpression: '#s = :r AND attempts = :n',
  ExpressionAttributeNames: { '#s': 'state' },
  ExpressionAttributeValues: { ':r': 'running', ':n': rec.attempts },
});

const packable = (a: LineAnswer): boolean => (a.out.body?.length ?? 0) <= PACK_BODY_MAX;

/** The pack items of fresh lines' answers: per chunk, as many answers to an item as PACK_MAX_BYTES allow. */
function packItems(answers: readonly LineAnswer[]): Item[] {
  const byChunk = new Map<string, PackedLine[]>();
  for (const { rec, out } of answers) {
    const { batch_id, ...line } = { ...rec, ...out, state: 'done' as const };
    const key = `${batch_id}|${chunkOf(rec.index)}`;
    byChunk.set(key, [...(byChunk.get(key) ?? []), line]);
  }
  const items: Item[] = [];
  for (const [key, lines] of byChunk) {
    const [batchId, chunk] = key.split('|') as [string, string];
    for (const group of transactGroups(lines, (l) => Buffer.byteLength(JSON.stringify(l)), PACK_MAX_BYTES)) {
      items.push({
        pk: `BATCH#${batchId}`,
        sk: `${PACK_PREFIX}${chunk.padStart(9, '0')}#${randomBytes(8).toString('hex')}`,
        _type: 'BatchAnswerPack',
        a: JSON.stringify(group),
      });
    }
  }
  return items;
}

/** Answers' batch writes: unprocessed items re-sent, failed requests retried, with backoff. */
const ANSWER_RETRY = { clock: systemClock };

export class BatchRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async create(rec: BatchRecord): Promise<void> {
    await this.#t.transact([
      { Put: { TableName: this.#t.tableName, Item: Batch.toItem(rec), ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { TableName: this.#t.tableName, Item: ActiveBatch.toItem({ id: rec.id }) } },
    ]);
  }

  get(id: string): Promise<BatchRecord | undefined> {
    return this.#t.get(Batch, { pk: `BATCH#${id}`, sk: 'BATCH' }, true);
  }

  /**
   * Moves the batch from one of `from` to `to`, setting the given fields (timestamps, files,
   * counts); false when the batch was no longer in one of `from` (another worker moved it).
   */
  async transition(id: string, from: readonly BatchStatus[], to: BatchStatus, fields: Partial<BatchRecord> = {}): Promise<boolean> {
    const set: Record<string, unknown> = { ...fields, status: to };
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const parts = Object.entries(set).map(([k, v], i) => {
      names[`#f${i}`] = k;
      values[`:v${i}`] = v;
      return `#f${i} = :v${i}`;
    });
    const allowed = from.map((s, i) => {
      values[`:from${i}`] = s;
      return `:from${i}`;
    });
    return this.#conditional(
      new UpdateCommand({
        TableName: this.#t.tableName,
        Key: { pk: `BATCH#${id}`, sk: 'BATCH' },
        UpdateExpression: `SET ${parts.join(', ')}`,
        ConditionExpression: `#status IN (${allowed.join(', ')})`,
        ExpressionAttributeNames: { ...names, '#status': 'status' },
        ExpressionAttributeValues: values,
      }),
    );
  }

  /** Once final, a restarted runner has nothing left to do for the batch. */
  async retire(id: string): Promise<void> {
    await this.#t.doc.send(new DeleteCommand({ TableName: this.#t.tableName, Key: { pk: 'BATCHES#ACTIVE', sk: id } }));
  }

  async active(): Promise<string[]> {
    const rows = await this.#t.queryAll(ActiveBatch, { KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'BATCHES#ACTIVE' } });
    return rows.map((r) => r.id);
  }

  /** Newest first, `limit` at most, after the batch `after`. */
  async list(workspaceId: string, opts: { limit: number; after?: string }): Promise<{ data: BatchRecord[]; has_more: boolean }> {
    const pk = `WS#${workspaceId}#BATCHES`;
    const page = await this.#t.doc.send(
      new QueryCommand({
        TableName: this.#t.tableName,
        IndexName: 'gsi1',
        KeyConditionExpression: opts.after ? 'gsi1pk = :p AND gsi1sk < :a' : 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': pk, ...(opts.after ? { ':a': opts.after } : {}) },
        ScanIndexForward: false,
        Limit: opts.limit + 1,
      }),
    );
    const data = (page.Items ?? []).map((i) => Batch.fromItem(i as Item));
    return { data: data.slice(0, opts.limit), has_more: data.length > opts.limit };
  }

  /** The recorded lines with index in [start, end), in order (see `streamLines`). */
  async lines(id: string, start: number, end: number): Promise<BatchLineRecord[]> {
    const out: BatchLineRecord[] = [];
    for await (const r of this.streamLines(id, start, end)) out.push(r);
    return out;
  }

  /**
   * The records of [start, end) in line order, a chunk at a time: the chunk's packed answers (held,
   * each at most PACK_BODY_MAX) merged into its line records (a page at a time), so finalize reads a
   * whole batch (50,000 lines, each with its answer) and never holds it. A line both packed and
   * recorded (two runs answered it) is the record when that says `done`, else the packed answer.
   */
  async *streamLines(id: string, start: number, end: number): AsyncGenerator<BatchLineRecord> {
    for (let chunk = chunkOf(start); chunk < end; chunk += BATCH_CHUNK_LINES) {
      const lo = Math.max(start, chunk);
      const hi = Math.min(end, chunk + BATCH_CHUNK_LINES);
      const packed = await this.#packed(id, chunk, lo, hi);
      const input = { TableName: this.#t.tableName, ...this.#linesQuery(id, lo, hi) };
      let i = 0;
      for await (const page of queryPages(this.#t.doc, input)) {
        for (const item of page) {
          const r = BatchLine.fromItem(item);
          while (i < packed.length && packed[i]!.index < r.index) yield packed[i++]!;
          const twin = packed[i]?.index === r.index ? packed[i++] : undefined;
          yield twin && r.state !== 'done' ? twin : r;
        }
      }
      while (i < packed.length) yield packed[i++]!;
    }
  }

  /** The packed answers of a chunk with index in [lo, hi), in line order, the first of a line only. */
  async #packed(id: string, chunk: number, lo: number, hi: number): Promise<BatchLineRecord[]> {
    const prefix = `${PACK_PREFIX}${String(chunk).padStart(9, '0')}#`;
    const items = await queryAll(this.#t.doc, {
      TableName: this.#t.tableName,
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :k)',
      ExpressionAttributeValues: { ':p': `BATCH#${id}`, ':k': prefix },
      ConsistentRead: true,
    });
    const byIndex = new Map<number, BatchLineRecord>();
    for (const item of items)
      for (const line of JSON.parse(String(item.a)) as PackedLine[])
        if (line.index >= lo && line.index < hi && !byIndex.has(line.index)) byIndex.set(line.index, { batch_id: id, ...line });
    return [...byIndex.values()].sort((a, b) => a.index - b.index);
  }

  #linesQuery(id: string, start: number, end: number) {
    return {
      KeyConditionExpression: 'pk = :p AND sk BETWEEN :a AND :b',
      ExpressionAttributeValues: { ':p': `BATCH#${id}`, ':a': lineSk(start), ':b': lineSk(Math.max(start, end - 1)) },
      ConsistentRead: true,
    };
  }

  /**
   * Claims lines before their calls: for each, a new record in state `running`; a `throttled` one
   * back to `running`; or, to run it again, one a stopped worker left `running` (counted in
   * `reruns`). Conditional on the record being as `previous` was read, so of two runners only one
   * wins. Returns, in order, each line's claimed record, or undefined when the line is recorded
   * otherwise (run, or claimed by another runner).
   *
   * One transaction per TRANSACT_MAX_ITEMS lines: most of a write's cost is per request (measured
   * on DynamoDB Local: about 1.5 ms of its CPU and 1 ms of the SDK's for a put, against 0.3 ms and
   * 0.04 ms per line in a transaction of 100). A transaction is all or nothing: when another
   * runner took one of the lines meanwhile it is cancelled, and the group is claimed line by line.
   */
  async claimAll(claims: readonly LineClaim[]): Promise<Array<BatchLineRecord | undefined>> {
    const puts = claims.map(claimPut);
    const groups = transactGroups(puts, () => 1);
    const done = await Promise.all(groups.map((g) => this.#putAll(g.map((p) => p.put))));
    return groups.flatMap((g, i) => g.map((p, j) => (done[i]![j] ? p.rec : undefined)));
  }

  /**
   * A throttled line goes back to be run again (its 429 settled nothing); false when it is no longer
   * this run's (another run recorded it meanwhile). A fresh line gets its record here.
   */
  async release(rec: BatchLineRecord, fresh = false): Promise<boolean> {
    if (fresh) return this.#put({ Item: BatchLine.toItem({ ...rec, state: 'throttled' }), ...NO_RECORD });
    return this.#conditional(
      new UpdateCommand({
        TableName: this.#t.tableName,
        Key: BatchLine.key(rec),
        UpdateExpression: 'SET #s = :t',
        ConditionExpression: '#s = :r AND attempts = :n',
        ExpressionAttributeNames: { '#s': 'state' },
        ExpressionAttributeValues: { ':t': 'throttled', ':r': 'running', ':n': rec.attempts },
      }),
    );
  }

  /**
   * Takes the chunk for this run: a new epoch (the run that held it, if any, can start no more
   * lines) and the mark of the lines started so far. One UpdateItem, atomic: of two runs taking
   * the chunk at once, the later one holds it.
   */
  async takeRun(batchId: string, start: number): Promise<ChunkRunRecord> {
    const out = await this.#t.doc.send(
      new UpdateCommand({
        TableName: this.#t.tableName,
        Key: ChunkRun.key({ batch_id: batchId, start }),
        UpdateExpression: 'ADD epoch :one SET started = if_not_exists(started, :s), batch_id = :b, #start = :s, #type = :type',
        ExpressionAttributeNames: { '#start': 'start', '#type': '_type' },
        ExpressionAttributeValues: { ':one': 1, ':s': start, ':b': batchId, ':type': ChunkRun.decl.name },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return ChunkRun.fromItem(out.Attributes as Item);
  }

  /**
   * Claims the chunk's lines below `started` (every one not yet started, in line order) for the run
   * that holds it: false when another run has taken the chunk since, and none of them may start.
   */
  async advance(run: ChunkRunRecord, started: number): Promise<boolean> {
    if (
      !(await this.#conditional(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: ChunkRun.key(run),
          UpdateExpression: 'SET started = :h',
          ConditionExpression: 'epoch = :e AND started <= :h',
          ExpressionAttributeValues: { ':h': started, ':e': run.epoch },
        }),
      ))
    )
      return false;
    run.started = started;
    return true;
  }

  /** The marks of every chunk run of the batch (chunks never run have none). */
  async runs(batchId: string): Promise<ChunkRunRecord[]> {
    return this.#t.queryAll(ChunkRun, {
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :r)',
      ExpressionAttributeValues: { ':p': `BATCH#${batchId}`, ':r': RUN_PREFIX },
      ConsistentRead: true,
    });
  }

  /**
   * Records a running line's answer; false when the line was not running (another worker owns it).
   * The line records are the truth: finalize counts the batch's lines and usage from them. The
   * batch's live counts (progress while it runs) are added apart, by `count`, for many lines at once.
   */
  complete(rec: BatchLineRecord, out: LineOutcome): Promise<boolean> {
    return this.#put(completePut({ rec, out }));
  }

  /**
   * Records many answers: whether each was recorded. Fresh lines (no record yet) go 25 a
   * BatchWriteItem, unconditional: a run's answer only ever meets another real answer of the same
   * line (a run that took the chunk over and ran the line again), and the line keeps one of them;
   * a put in a transaction costs DynamoDB twice the write units, and DynamoDB Local twice the CPU.
   * Lines with a record go a transaction per TRANSACT_MAX_ITEMS lines (or 3 MB of answers),
   * conditional as `complete` says; a cancelled transaction (a line another worker owns now) is
   * done again line by line. Any other failure throws once the rest is written: the lines not
   * recorded stay below their chunk's mark (or `running`), and a new run runs them again.
   */
  async completeAll(answers: readonly LineAnswer[]): Promise<boolean[]> {
    const fresh = answers.filter((a) => a.fresh);
    const claimed = answers.filter((a) => !a.fresh);
    const items = [
      ...packItems(fresh.filter(packable)),
      ...fresh.filter((a) => !packable(a)).map(({ rec, out }) => BatchLine.toItem({ ...rec, ...out, state: 'done' })),
    ];
    const [unwritten, done] = await Promise.all([
      items.length > 0 ? batchPut(this.#t.doc, this.#t.tableName, items, ANSWER_RETRY) : new Set<number>(),
      Promise.all(transactGroups(claimed, answerBytes).map((g) => this.#putAll(g.map(completePut)))),
    ]);
    if (unwritten.size > 0) throw new Error(`${unwritten.size} items of batch line answers could not be written`);
    const flat = done.flat();
    const recorded = new Map(claimed.map((a, i) => [a, flat[i]!]));
    return answers.map((a) => (a.fresh ? true : recorded.get(a)!));
  }

  /** Sends a conditional write; false when its condition failed. */
  async #conditional(command: PutCommand | UpdateCommand): Promise<boolean> {
    try {
      await (command instanceof PutCommand ? this.#t.doc.send(command) : this.#t.doc.send(command));
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  }

  /** One conditional put; false when its condition failed. */
  async #put(put: Put): Promise<boolean> {
    return this.#conditional(new PutCommand({ TableName: this.#t.tableName, ...put }));
  }

  /**
   * Conditional puts in one transaction (its idempotency token, which the SDK fills, makes a
   * retried request safe); cancelled, each put alone, so a line taken by someone else fails alone.
   */
  async #putAll(puts: readonly Put[]): Promise<boolean[]> {
    if (puts.length === 1) return [await this.#put(puts[0]!)];
    try {
      await this.#t.doc.send(new TransactWriteCommand({ TransactItems: puts.map((p) => ({ Put: { TableName: this.#t.tableName, ...p } })) }));
      return puts.map(() => true);
    } catch (err) {
      if (!isCancelled(err)) throw err;
      return Promise.all(puts.map((p) => this.#put(p)));
    }
  }

  /**
   * Adds recorded lines to the batch's live counts (progress only: finalize recounts from the line
   * records, so a crash between a line's record and its count skews only the progress shown while
   * the batch runs). No transaction with the line: every line would contend on the batch item, and
   * DynamoDB cancels transactions that conflict.
   */
  async count(batchId: string, p: BatchProgress): Promise<void> {
    if (p.completed === 0 && p.failed === 0) return;
    await this.#t.doc.send(
      new UpdateCommand({
        TableName: this.#t.tableName,
        Key: { pk: `BATCH#${batchId}`, sk: 'BATCH' },
        UpdateExpression: 'ADD completed :d, failed :f, input_tokens :i, output_tokens :o, cached_tokens :k, reasoning_tokens :r, cost_micros :c',
        ExpressionAttributeValues: {
          ':d': p.completed,
          ':f': p.failed,
          ':i': p.input_tokens,
          ':o': p.output_tokens,
          ':k': p.cached_tokens,
          ':r': p.reasoning_tokens,
          ':c': p.cost_micros,
        },
      }),
    );
  }
}

/** Lines recorded since the batch's live counts were last added to. */
export interface BatchProgress {
  completed: number;
  failed: number;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost_micros: number;
}
