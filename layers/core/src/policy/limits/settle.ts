/**
 * Settlement: once a request is over, each of its reservations moves to what the request really
 * used. Requests stay counted unless the provider never answered or the cache did; tokens and cost
 * move to the real usage, keep the estimate when the usage is unknown (a stream without usage,
 * cancelled or not), and drop to zero for a cache hit or an error without usage. A settled budget
 * may cross its threshold or be exhausted: the crossing is reported once.
 */
import type { Logger } from '../../ports/logger.ts';
import type { GatewayRecord } from '../../kernel/lifecycle.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Item } from '../../store/entity.ts';
import { checkCrossings, type CrossingDeps } from './crossings.ts';
import type { CostEstimator } from './estimate.ts';
import { isCacheHit, type Plan } from './plans.ts';

/** A reservation taken, and the counter right after it. */
export interface Held {
  plan: Plan;
  after: Item;
}

export interface SettleDeps extends CrossingDeps {
  clock: Clock;
  logger: Logger;
  /** Read on every use, so the pricing catalogue can be plugged in after start. */
  costs: () => CostEstimator;
  /** Keeps units a request gave back in this instance's lease (approximate mode); false: give them to the counter. */
  giveBack?: (plan: Plan, amount: number) => boolean;
}

/** What a reservation turns into once the request is over. */
export function settledAmount(plan: Plan, record: GatewayRecord, costs: CostEstimator): number {
  if (plan.kind === 'budget' && plan.targetPath !== undefined && plan.targetPath !== record.targetPath) return 0;
  const answered = record.upstreamHeadersAt !== undefined && !isCacheHit(record.cacheStatus);
  if (!answered) return 0;
  const unit = plan.kind === 'rate' ? plan.type : plan.budget.type;
  if (unit === 'requests') return plan.amount;
  const unknownKeeps = record.cancelled === true || (record.status ?? 0) < 400;
  if (unit === 'tokens') {
    if (record.usage) return record.usage.total_tokens;
    return unknownKeeps ? plan.amount : 0;
  }
  if (record.costMicros !== undefined) return Math.max(0, Math.round(record.costMicros));
  if (record.usage) {
    return costs.micros({
      organisationId: record.principal?.organisationId,
      workspaceId: record.principal?.workspaceId ?? undefined,
      provider: record.provider,
      model: record.model,
      promptTokens: record.usage.prompt_tokens,
      completionTokens: record.usage.completion_tokens,
    });
  }
  return unknownKeeps ? plan.amount : 0;
}

export async function settle(d: SettleDeps, record: GatewayRecord, held: readonly Held[]): Promise<void> {
  const now = d.clock.now();
  await Promise.all(
    held.map(async (h) => {
      try {
        // Most settlements change nothing (a request counted as reserved): no counter call then.
        const delta = settledAmount(h.plan, record, d.costs()) - h.plan.amount;
        const local = delta < 0 && d.giveBack?.(h.plan, -delta) === true;
        const changed = delta === 0 || local ? undefined : await d.repo.adjust(h.plan.key, delta);
        if (h.plan.kind === 'budget') await checkCrossings(d, h.plan, changed ?? h.after, now);
      } catch (err) {
        d.logger.error('limits: settle failed', { error: err, counter: h.plan.key.pk });
      }
    }),
  );
}
