/**
 * The usage reset worker, invoked by EventBridge Scheduler: records the periodic resets of usage
 * limits policies that fell due. Idempotent, so a repeated or overlapping invocation is harmless.
 */
import middy from '@middy/core';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import type { ResetRunResult } from '../../../layers/core/src/policy/limits/resets.ts';
import { runResets } from '../../../layers/core/src/policy/limits/workers.ts';
import { depsFromEnv } from '../../shared/deps.ts';

export function createUsageResetHandler(getDeps: () => Promise<CoreDeps>) {
  return middy<unknown, ResetRunResult>().handler(async () => runResets(await getDeps()));
}

export const handler = createUsageResetHandler(depsFromEnv);
