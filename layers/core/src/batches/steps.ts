/**
 * The batch engine as steps of a workflow (Step Functions in AWS): one entry point taking an
 * action, so a single function serves every state of the state machine. Runtime-agnostic: the
 * Lambda handler only passes its event in.
 *
 * - `start` validates and answers the chunks to map over (or a final status: no chunk runs);
 * - `chunk` runs one chunk; lines released after a 429 make it throw BatchThrottledError, which
 *   the state machine retries with backoff (the engine's own AIMD has already slowed down);
 * - `finalize` writes the output and error files and the final status;
 * - `fail` is the state machine's catch path: the batch is marked failed with the reason.
 */
import type { CoreDeps } from '../deps.ts';
import { ValidationError } from '../http/errors.ts';
import { BatchRepository, FINAL_STATUSES, type BatchStatus } from '../store/batches.ts';
import { finalizeBatch, runChunk, startBatch, type BatchChunk } from './engine.ts';

/** The error name the state machine retries on (its `Retry.ErrorEquals`). */
export const BATCH_THROTTLED = 'BatchThrottled';

export class BatchThrottledError extends Error {
  override name = BATCH_THROTTLED;
}

export type BatchStep =
  | { action: 'start'; batchId: string }
  | { action: 'chunk'; batchId: string; chunk: BatchChunk; maxConcurrency?: number }
  | { action: 'finalize'; batchId: string }
  | { action: 'fail'; batchId: string; error?: { Error?: string; Cause?: string } };

export type BatchStepResult =
  | { batchId: string; status: BatchStatus; chunks: BatchChunk[] }
  | { batchId: string; ran: number; skipped: number }
  | { batchId: string; status: BatchStatus };

export async function runBatchStep(deps: CoreDeps, step: BatchStep): Promise<BatchStepResult> {
  if (typeof step?.batchId !== 'string' || step.batchId === '') throw ValidationError.field('batchId', 'is required');
  switch (step.action) {
    case 'start':
      return { batchId: step.batchId, ...(await startBatch(deps, step.batchId)) };
    case 'chunk': {
      const opts = step.maxConcurrency ? { maxConcurrency: step.maxConcurrency } : {};
      const { ran, skipped, throttled } = await runChunk(deps, step.batchId, step.chunk, opts);
      if (throttled > 0)
        throw new BatchThrottledError(`${throttled} lines of lines ${step.chunk.start}-${step.chunk.end} were answered 429 and wait to run again`);
      return { batchId: step.batchId, ran, skipped };
    }
    case 'finalize':
      return { batchId: step.batchId, status: (await finalizeBatch(deps, step.batchId)).status };
    case 'fail':
      return { batchId: step.batchId, status: await failBatch(deps, step.batchId, step.error) };
    default:
      throw ValidationError.field('action', 'must be one of start, chunk, finalize, fail');
  }
}

/** Marks a batch that is not final yet failed, with the workflow's error as its reason. */
async function failBatch(deps: CoreDeps, batchId: string, error: { Error?: string; Cause?: string } | undefined): Promise<BatchStatus> {
  const repo = new BatchRepository(deps.repos.table);
  const b = await repo.get(batchId);
  if (!b || FINAL_STATUSES.has(b.status)) return b?.status ?? 'failed';
  const from = (['validating', 'in_progress', 'finalizing', 'cancelling'] as const).filter((s) => s === b.status);
  // The workflow's error names the step that failed, never the request's content or credentials.
  const message = `The batch run failed: ${error?.Error ?? 'unknown error'}`;
  const moved = await repo.transition(batchId, from, 'failed', {
    failed_at: Math.floor(deps.clock.now() / 1000),
    errors: [...(b.errors ?? []), { code: 'batch_failed', message, param: null, line: null }],
  });
  if (moved) await repo.retire(batchId);
  return moved ? 'failed' : ((await repo.get(batchId))?.status ?? 'failed');
}
