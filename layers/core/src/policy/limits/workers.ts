/**
 * The limits feature's background work: the alerts consumer (the `alerts` queue) and the periodic
 * reset run. Lambda workers wrap these; the local server attaches them in-process.
 */
import type { CoreDeps } from '../../deps.ts';
import type { QueueConsumer } from '../../ports/queue.ts';
import { ALERTS_QUEUE, createAlertConsumer, type UsageAlert } from './alerts.ts';
import { runUsageResets, startLocalResetSchedule, type ResetRunResult } from './resets.ts';

export function alertsConsumer(deps: CoreDeps): QueueConsumer<UsageAlert> {
  return createAlertConsumer({
    subject: deps.limits.subjects,
    mailer: deps.mailer,
    recipients: deps.limits.recipients,
    logger: deps.logger,
  });
}

export function runResets(deps: CoreDeps): Promise<ResetRunResult> {
  return runUsageResets({ limits: deps.limits, clock: deps.clock, logger: deps.logger });
}

export interface LocalLimitsWorkerOptions {
  /** How often the reset run looks for due resets (default one minute). */
  resetEveryMs?: number;
}

/** Local runtime: consumes alerts in-process and runs resets on a timer. Returns a stop function. */
export function startLocalLimitsWorkers(deps: CoreDeps, opts: LocalLimitsWorkerOptions = {}): () => void {
  deps.queues.get<UsageAlert>(ALERTS_QUEUE).setConsumer?.(alertsConsumer(deps));
  return startLocalResetSchedule({ limits: deps.limits, clock: deps.clock, logger: deps.logger }, opts.resetEveryMs);
}
