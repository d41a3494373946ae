/**
 * The key lifecycle worker, invoked by EventBridge Scheduler: expires keys, runs due rotation
 * policies, ends transitions, resets key usage and sends the key e-mails. Each change is a
 * conditional write, so a repeated or overlapping invocation is harmless.
 */
import middy from '@middy/core';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { runKeyLifecycle, type LifecycleResult } from '../../../layers/core/src/admin/api-keys/lifecycle.ts';
import { depsFromEnv } from '../../shared/deps.ts';

export function createKeyLifecycleHandler(getDeps: () => Promise<CoreDeps>) {
  return middy<unknown, LifecycleResult>().handler(async () => runKeyLifecycle(await getDeps()));
}

export const handler = createKeyLifecycleHandler(depsFromEnv);
