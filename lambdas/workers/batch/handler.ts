/**
 * The batch function: every state of the batch state machine invokes it with `{action, batchId,
 * ...}` (start, chunk, finalize, fail); the core's batches/steps.ts does the work. Wiring only.
 */
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { runBatchStep, type BatchStep, type BatchStepResult } from '../../../layers/core/src/batches/steps.ts';
import { depsFromEnv } from '../../shared/deps.ts';
import { flushHooks } from '../../shared/observability.ts';

export function createBatchHandler(getDeps: () => Promise<CoreDeps>) {
  return async (event: BatchStep): Promise<BatchStepResult> => {
    const deps = await getDeps();
    try {
      return await runBatchStep(deps, event);
    } finally {
      // Each line's log and limit settlement finish before Lambda freezes the instance.
      await flushHooks(deps);
    }
  };
}

export const handler = createBatchHandler(depsFromEnv);
