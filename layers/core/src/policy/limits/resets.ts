/**
 * Periodic budget resets. Counters are keyed by period, so usage starts at zero on every instance
 * the moment a period begins, whether or not this job has run; the job records the reset on the
 * policy (`last_reset_at`, the next `next_usage_reset_at`) with a conditional update keyed by the
 * period that ended, so running it twice, or from two places at once, records each reset once.
 * EventBridge Scheduler runs it in AWS (the usage-reset worker); an interval timer locally.
 */
import { runEvery } from '../../ports/local/schedule.ts';
import type { Logger } from '../../ports/logger.ts';
import type { Clock } from '../../ports/clock.ts';
import type { LimitsRuntime } from './runtime.ts';
import { currentPeriod } from './counters.ts';

export interface ResetRunDeps {
  limits: Pick<LimitsRuntime, 'repo' | 'policies'>;
  clock: Clock;
  logger: Logger;
}

export interface ResetRunResult {
  /** Policies whose reset this run recorded. */
  reset: string[];
}

export async function runUsageResets(deps: ResetRunDeps): Promise<ResetRunResult> {
  const now = deps.clock.now();
  const { repo } = deps.limits;
  const reset: string[] = [];
  for (const entry of await repo.resetEntries()) {
    if (Date.parse(entry.next_usage_reset_at) > now) continue;
    try {
      const policy = await repo.getUsage(entry.organisation_id, entry.policy_id);
      // Read again: another run may have recorded this reset since the entry was listed.
      if (!policy || policy.status !== 'active' || policy.next_usage_reset_at === null || Date.parse(policy.next_usage_reset_at) > now) continue;
      const period = currentPeriod(policy, now);
      // A schedule that was down for several periods records the latest reset only.
      if (period.start === null || period.end === null) continue;
      const recorded = await repo.advanceReset(policy, policy.next_usage_reset_at, new Date(period.end).toISOString(), new Date(period.start).toISOString());
      if (recorded) {
        reset.push(policy.id);
        deps.limits.policies.invalidate(policy.workspace_id);
      }
    } catch (err) {
      deps.logger.error('usage reset failed', { error: err, policyId: entry.policy_id });
    }
  }
  return { reset };
}

/** Local runtime: runs the resets every `everyMs` (unref'd, so it never keeps the process up). */
export function startLocalResetSchedule(deps: ResetRunDeps, everyMs = 60_000): () => void {
  return runEvery(
    everyMs,
    () => runUsageResets(deps),
    (err) => deps.logger.error('usage reset run failed', { error: err }),
  );
}
