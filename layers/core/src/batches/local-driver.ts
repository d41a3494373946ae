/**
 * The local batch runner: the engine driven in-process. A started batch is validated, its chunks
 * run one after the other (each with AIMD concurrency up to the cap), then it is finalized. At most
 * `maxBatches` batches run at once; more wait their turn. On start-up `resume()` picks up every
 * batch left unfinished by a stopped process; the per-line records make running it again safe. A
 * run that fails (the table unreachable for a while) is run again after a back-off, RUN_RETRIES
 * times, so an outage stalls a batch rather than leaving it until the next start.
 */
import type { CoreDeps } from '../deps.ts';
import { DEFAULT_MAX_CONCURRENCY, finalizeBatch, LineWindow, runChunk, startBatch } from './engine.ts';
import { BatchRepository } from '../store/batches.ts';
import type { BatchRunner } from '../ports/batch-runner.ts';

export interface LocalBatchDriverOptions {
  maxBatches?: number;
  maxConcurrency?: number;
  /** The first wait before a failed run goes again, doubled each time up to RETRY_MAX_MS (default 1 s). */
  retryBaseMs?: number;
}

/** Failed runs of a batch run again this many times in a row, then wait for the next start. */
const RUN_RETRIES = 8;
const RETRY_MAX_MS = 60_000;

export class LocalBatchDriver implements BatchRunner {
  readonly #deps: CoreDeps;
  readonly #maxBatches: number;
  readonly #maxConcurrency: number | undefined;
  readonly #waiting: string[] = [];
  readonly #running = new Map<string, Promise<void>>();
  readonly #retryBaseMs: number;
  /** Failed runs in a row, per batch. */
  readonly #failures = new Map<string, number>();
  readonly #retryTimers = new Set<ReturnType<typeof setTimeout>>();
  #abort = new AbortController();
  #drain = new AbortController();

  constructor(deps: CoreDeps, opts: LocalBatchDriverOptions = {}) {
    this.#deps = deps;
    this.#maxBatches = Math.max(1, opts.maxBatches ?? 2);
    this.#maxConcurrency = opts.maxConcurrency;
    this.#retryBaseMs = opts.retryBaseMs ?? 1000;
  }

  async start(batchId: string): Promise<void> {
    if (!this.#running.has(batchId) && !this.#waiting.includes(batchId)) this.#waiting.push(batchId);
    this.#pump();
  }

  /** Starts every batch a previous process left unfinished. */
  async resume(): Promise<string[]> {
    const ids = await new BatchRepository(this.#deps.repos.table).active();
    for (const id of ids) await this.start(id);
    return ids;
  }

  /** Resolves once nothing runs or waits (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  /** Stops as a crash would: no new line starts and lines in flight are not recorded. */
  async abort(): Promise<void> {
    this.#cancelRetries();
    this.#abort.abort(new Error('batch driver stopped'));
    await this.idle();
    this.#abort = new AbortController();
  }

  /** Stops gracefully (shutdown): no new line starts, lines in flight are recorded; resume() goes on later. */
  async stop(): Promise<void> {
    this.#cancelRetries();
    this.#drain.abort();
    await this.idle();
    this.#drain = new AbortController();
  }

  #pump(): void {
    while (this.#running.size < this.#maxBatches && this.#waiting.length > 0) {
      const id = this.#waiting.shift() as string;
      const run = this.#run(id, this.#abort.signal, this.#drain.signal)
        .then(() => void this.#failures.delete(id))
        .catch((error: unknown) => this.#failed(id, error))
        .finally(() => {
          this.#running.delete(id);
          this.#pump();
        });
      this.#running.set(id, run);
    }
  }

  /** A failed run goes again after a back-off (real time, as queue redelivery), unless the driver is stopping or it failed too often. */
  #failed(id: string, error: unknown): void {
    const failures = (this.#failures.get(id) ?? 0) + 1;
    if (this.#abort.signal.aborted || this.#drain.signal.aborted || failures > RUN_RETRIES) {
      this.#failures.delete(id);
      this.#deps.logger.error('batch run failed', { batchId: id, error, failures });
      return;
    }
    this.#failures.set(id, failures);
    const inMs = Math.min(RETRY_MAX_MS, this.#retryBaseMs * 2 ** (failures - 1));
    this.#deps.logger.warn('batch run failed; it runs again', { batchId: id, error, failures, in_ms: inMs });
    const timer = setTimeout(() => {
      this.#retryTimers.delete(timer);
      void this.start(id);
    }, inMs);
    timer.unref();
    this.#retryTimers.add(timer);
  }

  #cancelRetries(): void {
    this.#waiting.length = 0;
    for (const t of this.#retryTimers) clearTimeout(t);
    this.#retryTimers.clear();
    this.#failures.clear();
  }

  async #run(id: string, signal: AbortSignal, drain: AbortSignal): Promise<void> {
    const { chunks } = await startBatch(this.#deps, id);
    // One window for the batch: a chunk starts at the concurrency the one before reached.
    const window = new LineWindow(this.#maxConcurrency ?? DEFAULT_MAX_CONCURRENCY);
    for (const chunk of chunks) {
      if (signal.aborted || drain.aborted) return;
      await runChunk(this.#deps, id, chunk, { signal, drain, window });
    }
    if (!signal.aborted && !drain.aborted) await finalizeBatch(this.#deps, id);
  }
}
