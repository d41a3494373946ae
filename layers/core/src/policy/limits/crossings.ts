/**
 * Budget crossings: a budget's alert threshold or its limit, reported once per crossing across
 * every instance (the caller that sets the counter's flag queues the alert).
 */
import type { Item } from '../../store/entity.ts';
import type { LimitsRepository } from '../../store/limits.ts';
import type { AlertKind, UsageAlert } from './alerts.ts';
import { fromUnits, toUnits } from './counters.ts';
import type { BudgetPlan } from './plans.ts';

export interface CrossingDeps {
  repo: LimitsRepository;
  /** Queues an alert. */
  alert: (a: UsageAlert) => Promise<void>;
}

export async function checkCrossings(d: CrossingDeps, plan: BudgetPlan, counter: Item, now: number): Promise<void> {
  const used = typeof counter.used === 'number' ? counter.used : 0;
  const { budget } = plan;
  if (budget.alertThreshold !== null && !counter.threshold_alert_sent && used >= toUnits(budget, budget.alertThreshold)) {
    await alertOnce(d, plan, 'threshold', used, now);
  }
  if (!counter.exhausted_alert_sent && used >= plan.limit) await alertOnce(d, plan, 'exhausted', used, now);
}

/** Queues the alert if this caller is the one that set the counter's flag. */
export async function alertOnce(d: CrossingDeps, plan: BudgetPlan, kind: AlertKind, used: number, now: number): Promise<void> {
  const flag = kind === 'threshold' ? 'threshold_alert_sent' : 'exhausted_alert_sent';
  if (!(await d.repo.markAlert(plan.key, flag))) return;
  const { budget } = plan;
  const alert: UsageAlert = {
    kind,
    source: budget.source,
    source_id: budget.sourceId,
    organisation_id: budget.organisationId,
    workspace_id: budget.workspaceId,
    entity_id: plan.entityId,
    value_key: plan.valueKey,
    period: plan.period,
    type: budget.type,
    usage: fromUnits(budget, used),
    credit_limit: budget.creditLimit,
    alert_threshold: budget.alertThreshold,
    at: new Date(now).toISOString(),
  };
  try {
    await d.alert(alert);
  } catch (err) {
    // Not queued: clear the flag so that the next settlement reports the crossing instead.
    await d.repo.unmarkAlert(plan.key, flag).catch(() => undefined);
    throw err;
  }
}
