/**
 * The batch engine, the same code whichever runtime drives it (the in-process driver locally, Step
 * Functions and Lambda in AWS): start (validate every line, or fail with all of them and an error
 * file), run a chunk of lines (idempotent per line), finalize (output and error files, the final
 * status).
 *
 * A line is never lost and never answered twice. A run takes its chunk (a new epoch on the chunk's
 * run item) and claims new lines a window at a time by moving the chunk's `started` mark, one
 * conditional write for the window; a line's answer is recorded after its call (packed with other
 * first answers, or in the line's record, conditional on it still being this run's claim), and
 * finalize counts the batch from those answers. A line below the mark without an answer was in
 * flight when a worker stopped (a crash, a restart, or a run that another took over): it is run
 * once more, with a `running` record put before the call; found `running` again, it goes to the
 * error file as `request_interrupted`, so no line reaches the provider more than twice
 * (docs/batches.md#exactly-once). A line answered 429 settled nothing and is released
 * (`throttled`) to run again, up to MAX_ATTEMPTS. Everything is written many lines a request (a
 * request per line was most of a line's cost locally; an item per line, most of what was left).
 */
import type { CoreDeps } from '../deps.ts';
import type { EndpointSpec } from '../gateway/endpoint.ts';
import { NotFoundError } from '../http/errors.ts';
import {
  BATCH_CHUNK_LINES,
  BatchRepository,
  type ChunkRunRecord,
  FINAL_STATUSES,
  freshLine,
  type BatchLineRecord,
  type BatchProgress,
  type BatchRecord,
  type BatchStatus,
  type LineAnswer,
  type LineOutcome,
  TRANSACT_MAX_ITEMS,
} from '../store/batches.ts';
import { HeldFileRepository } from '../store/files.ts';
import { batchableSpecs, readRange, validateInput, type InputLine } from './input.ts';
import { callLine, openHeaders, type SealedHeaders } from './line-call.ts';
import { batchObject, type BatchObject } from './object.ts';
import { answeredOk, discardFile, type LineRecords, writeResults, writeValidationErrors } from './results.ts';

export type { BatchObject } from './object.ts';
export type { BatchStatus } from '../store/batches.ts';

/** 0-based line range [start, end). */
export interface BatchChunk {
  start: number;
  end: number;
}

export interface RunChunkOptions {
  /** The AIMD window never grows past this (default DEFAULT_MAX_CONCURRENCY). */
  maxConcurrency?: number;
  /**
   * The window to run with, kept by a runner that runs a batch's chunks one after the other (the
   * local driver), so each chunk goes on at the concurrency the last one reached instead of
   * starting over from INITIAL_CONCURRENCY; `maxConcurrency` is then the window's own.
   */
  window?: LineWindow;
  /** Aborting stops the chunk as a crash would: no new line starts, lines in flight are not recorded. */
  signal?: AbortSignal;
  /** Aborting stops the chunk gracefully: no new line starts, lines in flight finish and are recorded. */
  drain?: AbortSignal;
}

export const DEFAULT_MAX_CONCURRENCY = 64;
const INITIAL_CONCURRENCY = 4;
/** A line answered 429 this many times keeps its last 429 as its answer. */
const MAX_ATTEMPTS = 6;
const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 5000;
/** How often a running chunk re-reads the batch's status: a cancel stops new lines within this. */
const STATUS_REFRESH_MS = 1000;
/** A line found in flight by a new run is run again this many times at most. */
const MAX_RERUNS = 1;
/** The batch's live counts are added to after this many recorded lines, or this long after the last addition. */
const PROGRESS_LINES = 50;
const PROGRESS_MS = 1000;
/**
 * Answers are recorded together: after this many, or this long after the first one waiting. A
 * crash loses at most these (their lines are run once more, as lines in flight are).
 */
const ANSWER_GROUP = TRANSACT_MAX_ITEMS;
const ANSWER_WAIT_MS = 100;

const seconds = (deps: CoreDeps): number => Math.floor(deps.clock.now() / 1000);

async function load(repo: BatchRepository, id: string): Promise<BatchRecord> {
  const b = await repo.get(id);
  if (!b) throw new NotFoundError(`No such batch: ${id}`, { param: 'batch_id', openaiCode: 'not_found' });
  return b;
}

async function inputKey(deps: CoreDeps, b: BatchRecord): Promise<string | undefined> {
  return (await new HeldFileRepository(deps.repos.table).get(b.workspace_id, b.input_file_id))?.blob_key;
}

function chunksOf(total: number): BatchChunk[] {
  const out: BatchChunk[] = [];
  for (let start = 0; start < total; start += BATCH_CHUNK_LINES) out.push({ start, end: Math.min(total, start + BATCH_CHUNK_LINES) });
  return out;
}

/** validating -> in_progress (returns the chunks to run) or -> failed (every bad line in errors.data and the error file, no line run). */
export async function startBatch(deps: CoreDeps, batchId: string): Promise<{ status: BatchStatus; chunks: BatchChunk[] }> {
  const repo = new BatchRepository(deps.repos.table);
  let b = await load(repo, batchId);
  if (b.status === 'validating' || (b.status === 'cancelling' && b.in_progress_at === undefined && b.total === 0)) {
    const key = await inputKey(deps, b);
    const checked = key
      ? await validateInput(deps, key, b.endpoint)
      : {
          total: 0,
          errors: [{ code: 'invalid_input_file', message: `The input file ${b.input_file_id} no longer exists.`, param: 'input_file_id', line: null }],
        };
    const now = seconds(deps);
    if (checked.errors.length > 0) await fail(deps, repo, b, key, { failed_at: now, errors: checked.errors, total: checked.total });
    else if (!(await repo.transition(batchId, ['validating'], 'in_progress', { in_progress_at: now, total: checked.total }))) {
      // Cancelled while validating: the counts still say how many lines were not run.
      await repo.transition(batchId, ['cancelling'], 'cancelling', { total: checked.total });
    }
    b = await load(repo, batchId);
  }
  const runs = b.status === 'in_progress' || b.status === 'cancelling' || b.status === 'finalizing';
  return { status: b.status, chunks: runs ? chunksOf(b.total) : [] };
}

/** validating -> failed: the problems in errors.data and every line in the error file (none runs). */
async function fail(deps: CoreDeps, repo: BatchRepository, b: BatchRecord, key: string | undefined, fields: Partial<BatchRecord>): Promise<void> {
  const file = key && fields.total ? await writeValidationErrors(deps, b, key) : { error_file_id: undefined, failed: 0 };
  const moved = await repo.transition(b.id, ['validating', 'cancelling'], 'failed', {
    ...fields,
    failed: file.failed,
    ...(file.error_file_id ? { error_file_id: file.error_file_id } : {}),
  });
  // A start repeated after another had already failed the batch: its file is the one kept.
  if (!moved && file.error_file_id) await discardFile(deps, b, file.error_file_id);
  await repo.retire(b.id);
}

/** Says when to stop starting lines: aborted, past the window, or cancelled (re-read every STATUS_REFRESH_MS). */
class StopCheck {
  #status: BatchStatus;
  #readAt: number;
  readonly #repo: BatchRepository;
  readonly #b: BatchRecord;
  readonly #deps: CoreDeps;
  readonly #signals: Array<AbortSignal | undefined>;
  constructor(deps: CoreDeps, repo: BatchRepository, b: BatchRecord, signals: Array<AbortSignal | undefined>) {
    this.#deps = deps;
    this.#repo = repo;
    this.#b = b;
    this.#status = b.status;
    this.#signals = signals;
    this.#readAt = deps.clock.now();
  }
  async stop(): Promise<boolean> {
    if (this.#signals.some((s) => s?.aborted) || this.#status !== 'in_progress') return true;
    if (this.#deps.clock.now() >= this.#b.expires_at * 1000) return true;
    if (this.#deps.clock.now() - this.#readAt >= STATUS_REFRESH_MS) {
      this.#readAt = this.#deps.clock.now();
      this.#status = (await this.#repo.get(this.#b.id))?.status ?? 'cancelled';
    }
    return this.#status !== 'in_progress';
  }
}

interface Pending {
  line: InputLine;
  previous?: BatchLineRecord;
  /** Started by an earlier run that stopped before recording it (no record, below the mark). */
  lost?: boolean;
}

/** A line this run may call: its record (written, or for a fresh line only in memory). */
interface Claimed {
  rec: BatchLineRecord;
  fresh: boolean;
}

interface ChunkRun {
  deps: CoreDeps;
  repo: BatchRepository;
  b: BatchRecord;
  spec: EndpointSpec;
  sealed: SealedHeaders;
  signal: AbortSignal | undefined;
  progress: Progress;
  answers: Answers;
  /** The chunk's run item as this run holds it. */
  mark: ChunkRunRecord;
}

/**
 * The chunk's recorded lines not yet added to the batch's live counts. One UpdateItem per
 * PROGRESS_LINES lines instead of one per line: the batch item is a single hot item that every
 * line of every chunk would otherwise write, and progress needs no per-line precision (finalize
 * recounts from the line records).
 */
class Progress {
  #tally: BatchProgress = Progress.#empty();
  #lines = 0;
  #addedAt: number;
  readonly #repo: BatchRepository;
  readonly #batchId: string;
  readonly #clock: CoreDeps['clock'];
  constructor(repo: BatchRepository, batchId: string, clock: CoreDeps['clock']) {
    this.#repo = repo;
    this.#batchId = batchId;
    this.#clock = clock;
    this.#addedAt = clock.now();
  }
  static #empty(): BatchProgress {
    return { completed: 0, failed: 0, input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, cost_micros: 0 };
  }
  /** Counts a recorded line; adds the tally to the batch when it is due. */
  async add(out: LineOutcome, succeeded: boolean): Promise<void> {
    const t = this.#tally;
    if (succeeded) t.completed++;
    else t.failed++;
    t.input_tokens += out.input_tokens;
    t.output_tokens += out.output_tokens;
    t.cached_tokens += out.cached_tokens;
    t.reasoning_tokens += out.reasoning_tokens;
    t.cost_micros += out.cost_micros;
    this.#lines++;
    if (this.#lines >= PROGRESS_LINES || this.#clock.now() - this.#addedAt >= PROGRESS_MS) await this.flush().catch(() => undefined);
  }
  /** Adds what is counted; on failure the tally is kept for the next flush (and the error thrown). */
  async flush(): Promise<void> {
    const t = this.#tally;
    this.#tally = Progress.#empty();
    this.#lines = 0;
    this.#addedAt = this.#clock.now();
    try {
      await this.#repo.count(this.#batchId, t);
    } catch (err) {
      for (const k of Object.keys(t) as Array<keyof BatchProgress>) this.#tally[k] += t[k];
      throw err;
    }
  }
}

/**
 * The chunk's answers not yet recorded: written ANSWER_GROUP at a time (one transaction instead of
 * a put per line, DynamoDB's cost per request being most of a line's), or ANSWER_WAIT_MS after the
 * first one waiting, one write after the other. A line counts in the progress once its answer is
 * recorded. A write that fails is kept (`failure`): the chunk starts no new line and fails once the
 * lines in flight are done, and the lines of that write, still `running`, are run once more by the
 * next run of the chunk, as lines a crash left in flight are.
 */
class Answers {
  #waiting: LineAnswer[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writes: Promise<void> = Promise.resolve();
  failure: unknown;
  readonly #repo: BatchRepository;
  readonly #progress: Progress;
  constructor(repo: BatchRepository, progress: Progress) {
    this.#repo = repo;
    this.#progress = progress;
  }
  add(answer: LineAnswer): void {
    this.#waiting.push(answer);
    if (this.#waiting.length >= ANSWER_GROUP) this.#write();
    else this.#timer ??= setTimeout(() => this.#write(), ANSWER_WAIT_MS);
  }
  /** Records every answer waiting and waits for all writes; throws the first failure. */
  async flush(): Promise<void> {
    this.#write();
    await this.#writes;
    if (this.failure !== undefined) throw this.failure;
  }
  /** A crash: the answers waiting are never written (their lines stay `running`). */
  drop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiting = [];
  }
  #write(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#waiting.length === 0) return;
    const group = this.#waiting;
    this.#waiting = [];
    this.#writes = this.#writes.then(() => this.#record(group));
  }
  async #record(group: LineAnswer[]): Promise<void> {
    try {
      const recorded = await this.#repo.completeAll(group);
      for (const [i, { out }] of group.entries()) if (recorded[i]) await this.#progress.add(out, out.status_code >= 200 && out.status_code < 300);
    } catch (err) {
      this.failure ??= err;
    }
  }
}

/**
 * Sorts the chunk's lines: not yet recorded, throttled, or left running by a stopped worker for
 * the first time (to run); done (skipped); left running again (recorded as interrupted).
 */
async function pendingLines(c: ChunkRun, key: string, chunk: BatchChunk): Promise<{ pending: Pending[]; skipped: number }> {
  const lines = await readRange(c.deps, key, chunk.start, chunk.end);
  const records = new Map((await c.repo.lines(c.b.id, chunk.start, chunk.end)).map((r) => [r.index, r]));
  const pending: Pending[] = [];
  let skipped = 0;
  for (const line of lines) {
    const rec = records.get(line.index);
    if (!rec) pending.push(line.index < c.mark.started ? { line, lost: true } : { line });
    else if (rec.state === 'throttled' || (rec.state === 'running' && (rec.reruns ?? 0) < MAX_RERUNS)) pending.push({ line, previous: rec });
    else {
      skipped++;
      if (rec.state === 'running' && (await c.repo.complete(rec, interrupted()))) await c.progress.add(interrupted(), false);
    }
  }
  return { pending, skipped };
}

const interrupted = (): LineOutcome => ({
  status_code: 0,
  error: {
    code: 'request_interrupted',
    message: 'The workers running this request stopped twice before its answer was recorded; it is not run a third time. Resubmit it if needed.',
  },
  response_request_id: '',
  input_tokens: 0,
  output_tokens: 0,
  cached_tokens: 0,
  reasoning_tokens: 0,
  cost_micros: 0,
});

/** The AIMD window: +1 a success until the first 429 (slow start), then +1/window; halved on a 429. */
export class LineWindow {
  size: number;
  #slowStart = true;
  #throttles = 0;
  readonly #max: number;
  constructor(max: number) {
    this.#max = Math.max(1, max);
    this.size = Math.min(this.#max, INITIAL_CONCURRENCY);
  }
  success(): void {
    this.#throttles = 0;
    this.size = Math.min(this.#max, this.size + (this.#slowStart ? 1 : 1 / this.size));
  }
  /** Halves the window; how long to wait before the next start. */
  throttled(): number {
    this.#slowStart = false;
    this.size = Math.max(1, this.size / 2);
    return Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this.#throttles++);
  }
}

/** Runs the chunk's lines not yet recorded; AIMD concurrency up to `maxConcurrency`, backing off on 429s. */
export async function runChunk(
  deps: CoreDeps,
  batchId: string,
  chunk: BatchChunk,
  opts: RunChunkOptions = {},
): Promise<{ ran: number; skipped: number; throttled: number }> {
  const repo = new BatchRepository(deps.repos.table);
  const b = await load(repo, batchId);
  const key = await inputKey(deps, b);
  const spec = (await batchableSpecs()).get(b.endpoint);
  if (!key || !spec || b.status !== 'in_progress') return { ran: 0, skipped: chunk.end - chunk.start, throttled: 0 };
  const progress = new Progress(repo, b.id, deps.clock);
  const answers = new Answers(repo, progress);
  const sealed = await openHeaders(deps, b);
  // Taken before the records are read: a line the previous holder records after this is seen then, or refused to it.
  const mark = await repo.takeRun(b.id, chunk.start);
  const c: ChunkRun = { deps, repo, b, spec, sealed, signal: opts.signal, progress, answers, mark };
  try {
    return await runLines(c, key, chunk, opts);
  } finally {
    // An abort is a crash: the answers not yet written are lost, and their lines run once more.
    if (opts.signal?.aborted) answers.drop();
    // Otherwise, whatever ended the chunk, its answers are recorded and counted before it ends; a
    // failure here fails the chunk (it runs again: what is recorded is skipped, the rest runs).
    try {
      await answers.flush();
    } finally {
      await progress.flush();
    }
  }
}

/**
 * Starts lines while the window has room: the free places are claimed together (one write for
 * them all), then the claimed lines start at once, so a line is claimed only when it is about to
 * run and a crash leaves no line claimed that was not in flight. Claims made while others run
 * gather the places freed meanwhile.
 */
async function runLines(c: ChunkRun, key: string, chunk: BatchChunk, opts: RunChunkOptions): Promise<{ ran: number; skipped: number; throttled: number }> {
  const { deps, repo, b, answers } = c;
  const { pending, skipped } = await pendingLines(c, key, chunk);
  const stats = { ran: 0, skipped, throttled: 0 };
  const window = opts.window ?? new LineWindow(opts.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY);
  const stop = new StopCheck(deps, repo, b, [opts.signal, opts.drain]);
  const inflight = new Set<Promise<void>>();
  const run: LineRun = { c, window, stats, pending, opts, waitMs: 0, failure: undefined, takenOver: false };
  const failed = () => run.failure !== undefined || answers.failure !== undefined;
  while (pending.length > 0 || inflight.size > 0) {
    const room = Math.floor(window.size) - inflight.size;
    if (pending.length > 0 && room > 0 && !failed()) {
      if (await stop.stop()) {
        pending.length = 0;
        continue;
      }
      if (run.waitMs > 0) {
        const ms = run.waitMs;
        run.waitMs = 0;
        await deps.clock.sleep(ms, opts.signal).catch(() => undefined);
        continue;
      }
      const group = pending.splice(0, Math.min(room, TRANSACT_MAX_ITEMS));
      for (const [i, claimed] of (await claim(run, group)).entries()) {
        if (!claimed) continue;
        const task: Promise<void> = runLine(run, group[i]!.line, claimed).finally(() => inflight.delete(task));
        inflight.add(task);
      }
      // Another run took the chunk: it runs what is left (lines in flight here finish and are recorded).
      if (run.takenOver) pending.length = 0;
      continue;
    }
    if (failed()) pending.length = 0;
    if (inflight.size > 0) await Promise.race(inflight);
  }
  if (run.failure !== undefined) throw run.failure;
  return stats;
}

/** What the lines of one chunk run share. */
interface LineRun {
  c: ChunkRun;
  window: LineWindow;
  stats: { ran: number; skipped: number; throttled: number };
  pending: Pending[];
  opts: RunChunkOptions;
  /** How long to wait before the next start (after a 429). */
  waitMs: number;
  /** The first error of a line: no new line starts, and the chunk fails once the others are done. */
  failure: unknown;
  /** Another run has taken the chunk: this one starts no more lines. */
  takenOver: boolean;
}

/**
 * Claims the lines of a group, in order (undefined: recorded otherwise, or the chunk taken by
 * another run: skipped). New lines are claimed together by moving the chunk's mark past the last
 * of them; lines with a record, or lost by an earlier run, by conditional puts. A failed write
 * fails the chunk, and none of them runs.
 */
async function claim(run: LineRun, group: Pending[]): Promise<Array<Claimed | undefined>> {
  const { b, repo, mark } = run.c;
  const line = (p: Pending) => ({ batch_id: b.id, index: p.line.index, custom_id: p.line.custom_id });
  const isNew = (p: Pending) => !p.previous && !p.lost;
  const fresh = group.filter(isNew);
  const others = group.filter((p) => !isNew(p));
  try {
    const [advanced, records] = await Promise.all([
      fresh.length > 0 ? repo.advance(mark, fresh[fresh.length - 1]!.line.index + 1) : true,
      others.length > 0 ? repo.claimAll(others.map((p) => ({ line: line(p), previous: p.previous, lost: p.lost }))) : [],
    ]);
    if (!advanced) run.takenOver = true;
    const recorded = new Map(others.map((p, i) => [p, records[i]]));
    const claimed = group.map((p): Claimed | undefined => {
      if (isNew(p)) return advanced ? { rec: freshLine(line(p)), fresh: true } : undefined;
      const rec = recorded.get(p);
      return rec ? { rec, fresh: false } : undefined;
    });
    run.stats.skipped += claimed.filter((r) => r === undefined).length;
    return claimed;
  } catch (err) {
    run.failure ??= err;
    return [];
  }
}

/** Calls a claimed line; its answer waits to be recorded with others, a 429 puts it back to run again. */
async function runLine(run: LineRun, line: InputLine, { rec, fresh }: Claimed): Promise<void> {
  const { c, opts } = run;
  try {
    const out = await callLine(c.deps, c.spec, c.b, c.sealed, line, rec.request_id, opts.signal);
    // An abort is a crash: what was in flight stays unrecorded (or `running`).
    if (opts.signal?.aborted) return;
    if (out.status_code === 429 && rec.attempts < MAX_ATTEMPTS) {
      const released = await c.repo.release(rec, fresh);
      run.stats.throttled++;
      run.waitMs = Math.max(run.waitMs, run.window.throttled());
      // Not released: another run recorded the line meanwhile, and it is that run's now.
      if (released) run.pending.push({ line, previous: { ...rec, state: 'throttled' } });
      return;
    }
    if (out.status_code !== 429) run.window.success();
    c.answers.add({ rec, out, fresh });
    run.stats.ran++;
  } catch (err) {
    run.failure ??= err;
  }
}

type BatchUsage = Required<Pick<BatchRecord, 'input_tokens' | 'output_tokens' | 'cached_tokens' | 'reasoning_tokens' | 'cost_micros'>>;

/**
 * The batch's usage, exactly the sum of its answered lines (the live counters are progress only),
 * whether every line is recorded done, and whether every one was answered 2xx (no error file):
 * counted as one pass over the records goes by, a page at a time.
 */
class Tally {
  readonly usage: BatchUsage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0, reasoning_tokens: 0, cost_micros: 0 };
  #done = 0;
  #ok = 0;
  readonly #total: number;
  constructor(total: number) {
    this.#total = total;
  }
  get allDone(): boolean {
    return this.#done === this.#total;
  }
  get allOk(): boolean {
    return this.#ok === this.#total;
  }
  async *watch(records: AsyncIterable<BatchLineRecord>): AsyncGenerator<BatchLineRecord> {
    for await (const r of records) {
      if (r.state === 'done') {
        this.#done++;
        if (answeredOk(r)) this.#ok++;
        for (const k of Object.keys(this.usage) as Array<keyof BatchUsage>) this.usage[k] += r[k] ?? 0;
      }
      yield r;
    }
  }
  static async of(records: AsyncIterable<BatchLineRecord>, total: number): Promise<Tally> {
    const t = new Tally(total);
    for await (const _ of t.watch(records));
    return t;
  }
}

/**
 * The line records in line order, with a `running` one for each line a run started and stopped
 * before recording (below its chunk's mark, without a record): in the files, interrupted, not "not run".
 */
async function* withLost(records: AsyncIterable<BatchLineRecord>, marks: readonly ChunkRunRecord[], total: number): AsyncGenerator<BatchLineRecord> {
  function* lost(from: number, to: number): Generator<BatchLineRecord> {
    for (const m of marks)
      for (let index = Math.max(from, m.start); index < Math.min(to, m.started); index++) yield freshLine({ batch_id: m.batch_id, index, custom_id: '' });
  }
  let next = 0;
  for await (const r of records) {
    yield* lost(next, r.index);
    yield r;
    next = r.index + 1;
  }
  yield* lost(next, total);
}

type Files = Awaited<ReturnType<typeof writeResults>> | { completed: number; failed: number };

/** Writes output and error files from the per-line records; completed / cancelled / expired with *_at set. */
export async function finalizeBatch(deps: CoreDeps, batchId: string): Promise<BatchObject> {
  const repo = new BatchRepository(deps.repos.table);
  const b = await load(repo, batchId);
  if (FINAL_STATUSES.has(b.status) || b.status === 'validating') return batchObject(b);
  const marks = await repo.runs(batchId);
  const records = () => withLost(repo.streamLines(batchId, 0, b.total), marks, b.total);
  const key = await inputKey(deps, b);
  if (key && b.status === 'in_progress' && b.completed + b.failed >= b.total) {
    const done = await completeInOnePass(deps, repo, b, key, records);
    if (done) return done;
  }
  const tally = await Tally.of(records(), b.total);
  const expired = deps.clock.now() >= b.expires_at * 1000;
  const final: BatchStatus = b.status === 'cancelling' ? 'cancelled' : tally.allDone ? 'completed' : expired ? 'expired' : b.status;
  if (final === b.status) return batchObject(b);
  if (final === 'completed' && b.status === 'in_progress') await repo.transition(batchId, ['in_progress'], 'finalizing', { finalizing_at: seconds(deps) });
  const files = key
    ? await writeResults(deps, b, key, records, final === 'cancelled' ? 'batch_cancelled' : 'batch_expired', () => tally.allOk)
    : { completed: 0, failed: b.total };
  return settle(deps, repo, b, final, files, tally.usage);
}

/**
 * The usual end: the live counts say every line is recorded, so the batch is finalizing and its
 * records are read once, counted as the output file is written (the error file's pass is skipped
 * when every line was answered 2xx). Undefined when the records say otherwise (two runs counted a
 * line): the files are discarded and the batch is back in progress.
 */
async function completeInOnePass(deps: CoreDeps, repo: BatchRepository, b: BatchRecord, key: string, records: LineRecords): Promise<BatchObject | undefined> {
  if (!(await repo.transition(b.id, ['in_progress'], 'finalizing', { finalizing_at: seconds(deps) }))) return undefined;
  const tally = new Tally(b.total);
  let first = true;
  const counted: LineRecords = () => (first ? ((first = false), tally.watch(records())) : records());
  const files = await writeResults(deps, b, key, counted, 'batch_expired', () => tally.allOk);
  if (tally.allDone) return settle(deps, repo, b, 'completed', files, tally.usage);
  for (const id of [files.output_file_id, files.error_file_id]) if (id) await discardFile(deps, b, id);
  await repo.transition(b.id, ['finalizing'], 'in_progress');
  return undefined;
}

/** Sets the final status with its timestamp, files, counts and usage, and retires the batch. */
async function settle(deps: CoreDeps, repo: BatchRepository, b: BatchRecord, final: BatchStatus, files: Files, usage: BatchUsage): Promise<BatchObject> {
  const stamp = final === 'completed' ? 'completed_at' : final === 'cancelled' ? 'cancelled_at' : 'expired_at';
  const fields: Partial<BatchRecord> = { [stamp]: seconds(deps), completed: files.completed, failed: files.failed, ...usage };
  if ('output_file_id' in files && files.output_file_id) fields.output_file_id = files.output_file_id;
  if ('error_file_id' in files && files.error_file_id) fields.error_file_id = files.error_file_id;
  await repo.transition(b.id, [b.status, 'finalizing'], final, fields);
  await repo.retire(b.id);
  return batchObject(await load(repo, b.id));
}
