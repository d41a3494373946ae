/**
 * Planning: which limits a request (or one of its targets) meets, each as a plan to reserve in one
 * counter, and the refusal a client gets when a reservation is refused. Pure: no I/O.
 */
import type { GatewayRecord } from '../../kernel/lifecycle.ts';
import { RateLimitedError, UsageExhaustedError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { rateCounterPk, usageCounterPk, type CounterKey, type UsageLimitType } from '../../store/limits.ts';
import type { AlertSource } from './alerts.ts';
import type { AttachedLimits, AttachedUsageLimit } from '../../kernel/limits.ts';
import {
  BUDGET_COUNTER_GRACE_MS,
  currentPeriod,
  DEFAULT_LEASE_SIZE,
  fromUnits,
  keyBudgetCounter,
  RATE_COUNTER_GRACE_MS,
  toUnits,
  workspaceBudgetCounter,
} from './counters.ts';
import type { TokenEstimate } from './estimate.ts';
import { entityIdOf, groupValueKey, matchesConditions, type LimitContext } from './match.ts';
import type { WorkspacePolicies } from './policy-cache.ts';
import { budgetPeriod, calendarAnchor, formatDuration, rateWindow, UNIT_NAMES, type Period, type WindowUnit } from './windows.ts';

/** Which kinds of limits are on (POLICY_ENABLED, USAGE_LIMITS_ENABLED). */
export interface LimitFlags {
  policies: boolean;
  budgets: boolean;
}

export const isCacheHit = (status: string | undefined): boolean => status === 'HIT' || status === 'SEMANTIC HIT';

export interface RatePlan {
  kind: 'rate';
  label: string;
  type: 'requests' | 'tokens';
  unit: WindowUnit;
  key: CounterKey;
  amount: number;
  limit: number;
  windowEnd: number;
  set: Record<string, unknown>;
  /** Approximate mode: the lease size; reserved from this instance's lease (leases.ts). */
  lease?: number;
}

/** What a budget is, wherever it is declared (a policy, a key, a workspace). */
export interface Budget {
  source: AlertSource;
  sourceId: string;
  label: string;
  organisationId: string;
  workspaceId: string;
  type: UsageLimitType;
  creditLimit: number;
  alertThreshold: number | null;
}

export interface BudgetPlan {
  kind: 'budget';
  budget: Budget;
  key: CounterKey;
  amount: number;
  limit: number;
  entityId: string;
  valueKey: string;
  period: string;
  set: Record<string, unknown>;
  /** A provider's budget: the target it was reserved for; settled to nothing when another answered. */
  targetPath?: string;
}

export type Plan = RatePlan | BudgetPlan;

/**
 * `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` of the tightest limit of each type (the
 * least remaining): the refusing ones of a 429, or all those a successful request reserved in.
 */
export function rateHeaders(rates: readonly { plan: RatePlan; used: number }[], now: number): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { plan, used } of rates) {
    const remaining = Math.max(0, plan.limit - used);
    const shown = headers[`x-ratelimit-remaining-${plan.type}`];
    if (shown === undefined || remaining < Number(shown)) {
      headers[`x-ratelimit-limit-${plan.type}`] = String(plan.limit);
      headers[`x-ratelimit-remaining-${plan.type}`] = String(remaining);
      headers[`x-ratelimit-reset-${plan.type}`] = formatDuration(plan.windowEnd - now);
    }
  }
  return headers;
}

/** What one request may consume, worked out once for all its limits. */
export interface Demand {
  record: GatewayRecord;
  principal: Principal & { workspaceId: string };
  now: number;
  tokens(): TokenEstimate;
  cost(): number;
}

export function planRequest(d: Demand, policies: WorkspacePolicies, key: AttachedLimits | undefined, on: LimitFlags): Plan[] {
  const p = d.principal;
  const ctx: LimitContext = {
    organisationId: p.organisationId,
    workspaceId: p.workspaceId,
    apiKeyId: p.keyId,
    endpoint: d.record.endpoint,
    metadata: d.record.metadata,
  };
  const plans: Plan[] = [];
  if (on.policies) {
    for (const policy of policies.rate) {
      if (!matchesConditions(policy.conditions, ctx)) continue;
      const entityId = entityIdOf(groupValueKey(policy.group_by, ctx));
      const plan = ratePlan(d, `policy "${policy.name ?? policy.id}"`, policy.type, policy.unit, policy.value, (w) => rateCounterPk(policy, entityId, w));
      if (policy.mode === 'approximate') plan.lease = policy.lease_size ?? DEFAULT_LEASE_SIZE;
      plans.push(plan);
    }
  }
  // An API key's and a workspace's own rate limits count for the key / the workspace as a whole.
  key?.rate.forEach((r, i) => {
    plans.push(ratePlan(d, 'the API key’s rate limit', r.type, r.unit, r.value, (w) => rateCounterPk({ id: `key:${p.keyId}:${i}`, ...r }, '-', w)));
  });
  policies.workspace.rate.forEach((r, i) => {
    plans.push(ratePlan(d, 'the workspace’s rate limit', r.type, r.unit, r.value, (w) => rateCounterPk({ id: `ws:${p.workspaceId}:${i}`, ...r }, '-', w)));
  });
  if (!on.budgets) return plans;
  if (on.policies) {
    for (const policy of policies.usage) {
      if (!matchesConditions(policy.conditions, ctx)) continue;
      const valueKey = groupValueKey(policy.group_by, ctx);
      const entityId = entityIdOf(valueKey);
      const period = currentPeriod(policy, d.now);
      const budget: Budget = {
        source: 'policy',
        sourceId: policy.id,
        label: `policy "${policy.name ?? policy.id}"`,
        organisationId: policy.organisation_id,
        workspaceId: policy.workspace_id,
        type: policy.type,
        creditLimit: policy.credit_limit,
        alertThreshold: policy.alert_threshold,
      };
      plans.push(budgetPlan(d, budget, { pk: usageCounterPk(policy.id, period.key), sk: `E#${entityId}` }, entityId, valueKey, period));
    }
  }
  const keyBudget = key?.usage[0];
  if (keyBudget && p.limits) {
    const budget = attachedBudget('api_key', p.keyId, 'the API key’s usage limit', p, keyBudget);
    const period: Period = { key: `R${p.limits.reset_usage}`, start: null, end: null };
    plans.push(budgetPlan(d, budget, keyBudgetCounter(p.keyId, p.limits.reset_usage), 'key', `api_key:${p.keyId}`, period));
  }
  policies.workspace.usage.forEach((u, i) => {
    const budget = attachedBudget('workspace', p.workspaceId, 'the workspace’s usage limit', p, u);
    const period = budgetPeriod(u, calendarAnchor(u), d.now);
    plans.push(budgetPlan(d, budget, workspaceBudgetCounter(p.workspaceId, i, period.key), 'workspace', `workspace_id:${p.workspaceId}`, period));
  });
  return plans;
}

export function attachedBudget(source: AlertSource, sourceId: string, label: string, p: Demand['principal'], u: AttachedUsageLimit): Budget {
  return {
    source,
    sourceId,
    label,
    organisationId: p.organisationId,
    workspaceId: p.workspaceId,
    type: u.type,
    creditLimit: u.credit_limit,
    alertThreshold: u.alert_threshold,
  };
}

function ratePlan(d: Demand, label: string, type: 'requests' | 'tokens', unit: WindowUnit, value: number, pk: (windowStart: number) => string): RatePlan {
  const window = rateWindow(unit, d.now);
  return {
    kind: 'rate',
    label,
    type,
    unit,
    key: { pk: pk(window.start), sk: 'C' },
    amount: type === 'requests' ? 1 : d.tokens().total,
    limit: value,
    windowEnd: window.end,
    set: { ttl: Math.ceil((window.end + RATE_COUNTER_GRACE_MS) / 1000) },
  };
}

export function budgetPlan(d: Demand, budget: Budget, key: CounterKey, entityId: string, valueKey: string, period: Period): BudgetPlan {
  const set: Record<string, unknown> = {
    _type: 'UsageCounter',
    policy_id: budget.source === 'policy' ? budget.sourceId : `${budget.source}:${budget.sourceId}`,
    period: period.key,
    entity_id: entityId,
    value_key: valueKey,
  };
  if (period.end !== null) set.ttl = Math.ceil((period.end + BUDGET_COUNTER_GRACE_MS) / 1000);
  return {
    kind: 'budget',
    budget,
    key,
    amount: budget.type === 'tokens' ? d.tokens().total : d.cost(),
    limit: toUnits(budget, budget.creditLimit),
    entityId,
    valueKey,
    period: period.key,
    set,
  };
}

export function refusal(refused: { plan: Plan; result: { used: number } }[], now: number): RateLimitedError | UsageExhaustedError {
  // A budget outlasts any rate window: name it first.
  for (const r of refused) {
    if (r.plan.kind !== 'budget') continue;
    const { budget, amount, limit, valueKey } = r.plan;
    const left = Math.max(0, limit - r.result.used);
    const units = (v: number) => (budget.type === 'cost' ? `$${fromUnits(budget, v).toFixed(6)}` : `${v} tokens`);
    return new UsageExhaustedError(
      `Usage limit reached for ${valueKey} (${budget.label}): ${units(left)} of ${units(limit)} left, this request needs up to ${units(amount)}.`,
    );
  }
  let retryMs = 0;
  let first: { plan: RatePlan; used: number } | undefined;
  const rates: { plan: RatePlan; used: number }[] = [];
  for (const r of refused) {
    if (r.plan.kind !== 'rate') continue;
    first ??= { plan: r.plan, used: r.result.used };
    rates.push({ plan: r.plan, used: r.result.used });
    retryMs = Math.max(retryMs, r.plan.windowEnd - now);
  }
  // The tightest refusing limit of each family names the headers.
  const headers = rateHeaders(rates, now);
  const retryS = Math.max(1, Math.ceil(retryMs / 1000));
  headers['retry-after'] = String(retryS);
  const f = first as { plan: RatePlan; used: number };
  const { label, type, unit, amount, limit } = f.plan;
  const tooBig = amount > limit ? ' The request alone exceeds the limit.' : '';
  return new RateLimitedError(
    `Rate limit reached on ${type} per ${UNIT_NAMES[unit]} (${label}): Limit ${limit}, Used ${f.used}, Requested ${amount}.${tooBig} ` +
      `Please try again in ${retryS}s.`,
    { headers },
  );
}
