/**
 * The local batch runner: the engine driven in-process. A started batch is validated, its chunks
 * run one after the other (each with AIMD concurrency up to the cap), then it is finalized. At most
 * `maxBatches` batches run at once; more wait their turn. On start-up `resume()` picks up every
 * batch left unfinished by a stopped process; the per-line records make running it again safe.
 */
import type { CoreDeps } from '../deps.ts';
import { DEFAULT_MAX_CONCURRENCY, finalizeBatch, LineWindow, runChunk, startBatch } from './engine.ts';
import { BatchRepository } from '../store/batches.ts';
import type { BatchRunner } from '../ports/batch-runner.ts';

export interface LocalBatchDriverOptions {
  maxBatches?: number;
  maxConcurrency?: number;
}

export class LocalBatchDriver implements BatchRunner {
  readonly #deps: CoreDeps;
  readonly #maxBatches: number;
  readonly #maxConcurrency: number | undefined;
  readonly #waiting: string[] = [];
  readonly #running = new Map<string, Promise<void>>();
  #abort = new AbortController();
  #drain = new AbortController();

  constructor(deps: CoreDeps, opts: LocalBatchDriverOptions = {}) {
    this.#deps = deps;
    this.#maxBatches = Math.max(1, opts.maxBatches ?? 2);
    this.#maxConcurrency = opts.maxConcurrency;
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
    this.#waiting.length = 0;
    this.#abort.abort(new Error('batch driver stopped'));
    await this.idle();
    this.#abort = new AbortController();
  }

  /** Stops gracefully (shutdown): no new line starts, lines in flight are recorded; resume() goes on later. */
  async stop(): Promise<void> {
    this.#waiting.length = 0;
    this.#drain.abort();
    await this.idle();
    this.#drain = new AbortController();
  }

  #pump(): void {
    while (this.#running.size < this.#maxBatches && this.#waiting.length > 0) {
      const id = this.#waiting.shift() as string;
      const run = this.#run(id, this.#abort.signal, this.#drain.signal)
        .catch((error: unknown) => this.#deps.logger.error('batch run failed', { batchId: id, error }))
        .finally(() => {
          this.#running.delete(id);
          this.#pump();
        });
      this.#running.set(id, run);
    }
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
