/**
 * Rate limits and budgets at the gateway, as a GatewayHook. The limits that apply to a request are
 * the workspace's policies whose conditions hold, the API key's own `rate_limits`/`usage_limits`
 * and the workspace's own ones.
 *
 * admit: the workspace's policies and limits come from memory; a request that no limit applies to
 * makes no counter call. For each limit it reserves in the counter of the current window (rate) or
 * period (budget) with one conditional UpdateItem, all in parallel. If any refuses, the
 * reservations already taken are given back and the request is refused (429 for a rate limit, 402
 * for a budget) before any provider call.
 *
 * complete: each reservation is settled to what the request really used: requests stay counted
 * unless the provider never answered or the cache did; tokens and cost move to the real usage,
 * keep the estimate when the usage is unknown (a stream without usage, cancelled or not), and drop
 * to zero for a cache hit or an error without usage. Settling may cross a budget's threshold or
 * exhaust it, which queues an alert, once per crossing.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { FeatureFlags } from '../../config.ts';
import type { GatewayHook, GatewayRecord } from '../../gateway/lifecycle.ts';
import type { ProviderBudgetRequest } from '../../gateway/managed.ts';
import { RateLimitedError, UsageExhaustedError } from '../../http/errors.ts';
import type { Principal } from '../../policy/principal.ts';
import type { Clock } from '../../ports/clock.ts';
import type { Item } from '../../store/entity.ts';
import {
  rateCounterPk,
  usageCounterPk,
  type CounterKey,
  type LimitsRepository,
  type ReserveResult,
  type UsageLimitPolicyRecord,
  type UsageLimitType,
} from '../../store/limits.ts';
import type { AlertKind, AlertSource, UsageAlert } from './alerts.ts';
import { parseAttached, type AttachedLimits, type AttachedUsageLimit } from './attached.ts';
import { estimateTokens, type CostEstimator, type TokenEstimate } from './estimate.ts';
import { entityIdOf, groupValueKey, matchesConditions, type LimitContext } from './match.ts';
import { isEmpty, type PolicyCache, type WorkspacePolicies } from './policy-cache.ts';
import { budgetPeriod, calendarAnchor, formatDuration, rateWindow, UNIT_NAMES, type Period, type WindowUnit } from './windows.ts';

const MICROS_PER_DOLLAR = 1_000_000;
/** Counters outlive their window or period by this much, then DynamoDB's TTL drops them. */
const RATE_COUNTER_GRACE_MS = 60 * 60_000;
const BUDGET_COUNTER_GRACE_MS = 7 * 24 * 60 * 60_000;

/** A budget's limit and threshold in counter units: micro-dollars for cost, tokens for tokens. */
export const toUnits = (p: { type: UsageLimitType }, v: number): number => (p.type === 'cost' ? Math.round(v * MICROS_PER_DOLLAR) : Math.floor(v));
export const fromUnits = (p: { type: UsageLimitType }, v: number): number => (p.type === 'cost' ? v / MICROS_PER_DOLLAR : v);

/** The anchor of a policy's period lattice (epoch ms), or null when it never resets. */
export const anchorOf = (p: Pick<UsageLimitPolicyRecord, 'reset_anchor'>): number | null =>
  p.reset_anchor === null ? null : Date.parse(p.reset_anchor);

export const currentPeriod = (p: UsageLimitPolicyRecord, nowMs: number): Period => budgetPeriod(p, anchorOf(p), nowMs);

/** The counter of an API key's own budget: a key's usage resets by moving to the next `reset_usage`. */
export const keyBudgetCounter = (keyId: string, resetUsage: number): CounterKey => ({ pk: usageCounterPk(`key:${keyId}`, `R${resetUsage}`), sk: 'E#key' });

/** The counter of a workspace's own budget (the `index`th of its usage limits) in a period. */
export const workspaceBudgetCounter = (workspaceId: string, index: number, period: string): CounterKey => ({
  pk: usageCounterPk(`ws:${workspaceId}:${index}`, period),
  sk: 'E#workspace',
});

/** The counter of a managed provider's budget in a period. */
export const providerBudgetCounter = (providerId: string, period: string): CounterKey => ({
  pk: usageCounterPk(`provider:${providerId}`, period),
  sk: 'E#provider',
});

const isCacheHit = (status: string | undefined): boolean => status === 'HIT' || status === 'SEMANTIC HIT';

interface RatePlan {
  kind: 'rate';
  label: string;
  type: 'requests' | 'tokens';
  unit: WindowUnit;
  key: CounterKey;
  amount: number;
  limit: number;
  windowEnd: number;
  set: Record<string, unknown>;
}

/** What a budget is, wherever it is declared (a policy, a key, a workspace). */
interface Budget {
  source: AlertSource;
  sourceId: string;
  label: string;
  organisationId: string;
  workspaceId: string;
  type: UsageLimitType;
  creditLimit: number;
  alertThreshold: number | null;
}

interface BudgetPlan {
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

type Plan = RatePlan | BudgetPlan;

/**
 * `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` of the tightest limit of each type (the
 * least remaining): the refusing ones of a 429, or all those a successful request reserved in.
 */
function rateHeaders(rates: readonly { plan: RatePlan; used: number }[], now: number): Record<string, string> {
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

interface Held {
  plan: Plan;
  /** The counter right after the reservation. */
  after: Item;
}

export interface LimitsHookDeps {
  repo: LimitsRepository;
  policies: PolicyCache;
  clock: Clock;
  features: FeatureFlags;
  /** Read on every use, so the pricing catalogue can be plugged in after start. */
  costs: () => CostEstimator;
  /** Queues an alert. */
  alert: (a: UsageAlert) => Promise<void>;
  logger: Logger;
}

/** What one request may consume, worked out once for all its limits. */
interface Demand {
  record: GatewayRecord;
  principal: Principal & { workspaceId: string };
  now: number;
  tokens(): TokenEstimate;
  cost(): number;
}

export class LimitsHook implements GatewayHook {
  readonly name = 'limits';
  readonly #d: LimitsHookDeps;
  readonly #held = new WeakMap<GatewayRecord, Held[]>();
  readonly #pending = new Set<Promise<void>>();
  /** A warm key's principal is the same object on every request: its limits are parsed once. */
  readonly #keyLimitsOf = new WeakMap<Principal, AttachedLimits>();

  constructor(deps: LimitsHookDeps) {
    this.#d = deps;
  }

  /** Policies of both kinds (POLICY_ENABLED). */
  get #policiesOn(): boolean {
    return this.#d.features.policy;
  }

  /** Budgets of every source (USAGE_LIMITS_ENABLED); those of policies need POLICY_ENABLED too. */
  get #budgetsOn(): boolean {
    return this.#d.features.usageLimits;
  }

  async admit(record: GatewayRecord): Promise<void | Record<string, string>> {
    const p = record.principal;
    if (!p?.workspaceId) return;
    const key = this.#keyLimits(p);
    const policies = await this.#d.policies.forWorkspace(p.organisationId, p.workspaceId);
    const keyHasLimits = key !== undefined && (key.usage.length > 0 || key.rate.length > 0);
    if (isEmpty(policies) && !keyHasLimits) return;

    const now = this.#d.clock.now();
    let tokens: TokenEstimate | undefined;
    let cost: number | undefined;
    const demand: Demand = {
      record,
      principal: p as Principal & { workspaceId: string },
      now,
      tokens: () => (tokens ??= estimateTokens(record.endpoint, record.request)),
      cost: () => {
        const t = demand.tokens();
        cost ??= this.#d.costs().micros({
          organisationId: p.organisationId,
          workspaceId: p.workspaceId ?? undefined,
          provider: record.provider,
          model: record.model,
          promptTokens: t.prompt,
          completionTokens: t.completion,
        });
        return cost;
      },
    };
    const plans = this.#plans(demand, policies, key);
    if (plans.length === 0) return;

    const results = await Promise.allSettled(plans.map((plan) => this.#d.repo.reserve(plan.key, plan.amount, plan.limit, plan.set)));
    const held: Held[] = [];
    const refused: { plan: Plan; result: Extract<ReserveResult, { ok: false }> }[] = [];
    let failure: unknown;
    results.forEach((r, i) => {
      const plan = plans[i] as Plan;
      if (r.status === 'rejected') failure ??= r.reason;
      else if (r.value.ok) held.push({ plan, after: r.value.item });
      else refused.push({ plan, result: r.value });
    });
    if (refused.length === 0 && failure === undefined) {
      this.#held.set(record, held);
      // The figures of the reservations just taken, for the answer's `x-ratelimit-*` headers.
      const rates = held.flatMap((h) => (h.plan.kind === 'rate' ? [{ plan: h.plan, used: typeof h.after.used === 'number' ? h.after.used : h.plan.amount }] : []));
      return rates.length > 0 ? rateHeaders(rates, now) : undefined;
    }
    // All or nothing: what was taken for a request that does not go ahead is given back.
    await this.#release(held);
    for (const { plan, result } of refused) {
      if (plan.kind === 'budget' && result.item && !result.item.exhausted_alert_sent) this.#later(this.#alertOnce(plan, 'exhausted', result.used, now));
    }
    // A counter store that cannot be reached refuses rather than letting spend run unchecked.
    if (failure !== undefined) throw failure;
    throw this.#refusal(refused, now);
  }

  /**
   * A managed provider's budget, reserved when a target resolves to it (after admit: the provider
   * is only known per target). The refusal is answered rather than thrown, so that a fallback can
   * try its next target. Settled with the request's other reservations.
   */
  async reserveProvider(record: GatewayRecord, b: ProviderBudgetRequest): Promise<UsageExhaustedError | undefined> {
    const p = record.principal;
    if (!this.#budgetsOn || !p?.workspaceId) return undefined;
    const held = this.#held.get(record) ?? [];
    // A retry of the same target holds its reservation already.
    if (held.some((h) => h.plan.kind === 'budget' && h.plan.targetPath === b.targetPath)) return undefined;
    const now = this.#d.clock.now();
    const tokens = estimateTokens(record.endpoint, record.request);
    const principal = p as Principal & { workspaceId: string };
    const demand: Demand = {
      record,
      principal,
      now,
      tokens: () => tokens,
      cost: () =>
        this.#d.costs().micros({
          organisationId: p.organisationId,
          workspaceId: p.workspaceId ?? undefined,
          provider: b.provider,
          model: b.model ?? record.model,
          promptTokens: tokens.prompt,
          completionTokens: tokens.completion,
        }),
    };
    const budget = this.#attachedBudget('provider', b.slug, `the provider @${b.slug}’s usage limit`, principal, b.limit);
    const period = budgetPeriod(b.limit, calendarAnchor(b.limit), now);
    const plan: BudgetPlan = {
      ...this.#budgetPlan(demand, budget, providerBudgetCounter(b.providerId, period.key), 'provider', `provider:@${b.slug}`, period),
      targetPath: b.targetPath,
    };
    const r = await this.#d.repo.reserve(plan.key, plan.amount, plan.limit, plan.set);
    if (r.ok) {
      held.push({ plan, after: r.item });
      this.#held.set(record, held);
      return undefined;
    }
    if (r.item && !r.item.exhausted_alert_sent) this.#later(this.#alertOnce(plan, 'exhausted', r.used, now));
    return this.#refusal([{ plan, result: r }], now) as UsageExhaustedError;
  }

  complete(record: GatewayRecord): void {
    const held = this.#held.get(record);
    if (!held) return;
    this.#held.delete(record);
    this.#later(this.#settle(record, held));
  }

  #keyLimits(p: Principal): AttachedLimits | undefined {
    if (!p.limits) return undefined;
    let parsed = this.#keyLimitsOf.get(p);
    if (!parsed) {
      parsed = parseAttached(p.limits.usage_limits, p.limits.rate_limits);
      this.#keyLimitsOf.set(p, parsed);
    }
    return parsed;
  }

  /** Resolves once every settlement and alert started so far is done (Lambda, tests). */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  #plans(d: Demand, policies: WorkspacePolicies, key: AttachedLimits | undefined): Plan[] {
    const p = d.principal;
    const ctx: LimitContext = { organisationId: p.organisationId, workspaceId: p.workspaceId, apiKeyId: p.keyId, endpoint: d.record.endpoint, metadata: d.record.metadata };
    const plans: Plan[] = [];
    if (this.#policiesOn) {
      for (const policy of policies.rate) {
        if (!matchesConditions(policy.conditions, ctx)) continue;
        const entityId = entityIdOf(groupValueKey(policy.group_by, ctx));
        plans.push(this.#ratePlan(d, `policy "${policy.name ?? policy.id}"`, policy.type, policy.unit, policy.value, (w) => rateCounterPk(policy, entityId, w)));
      }
    }
    // An API key's and a workspace's own rate limits count for the key / the workspace as a whole.
    key?.rate.forEach((r, i) => {
      plans.push(this.#ratePlan(d, 'the API key’s rate limit', r.type, r.unit, r.value, (w) => rateCounterPk({ id: `key:${p.keyId}:${i}`, ...r }, '-', w)));
    });
    policies.workspace.rate.forEach((r, i) => {
      plans.push(this.#ratePlan(d, 'the workspace’s rate limit', r.type, r.unit, r.value, (w) => rateCounterPk({ id: `ws:${p.workspaceId}:${i}`, ...r }, '-', w)));
    });
    if (!this.#budgetsOn) return plans;
    if (this.#policiesOn) {
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
        plans.push(this.#budgetPlan(d, budget, { pk: usageCounterPk(policy.id, period.key), sk: `E#${entityId}` }, entityId, valueKey, period));
      }
    }
    const keyBudget = key?.usage[0];
    if (keyBudget && p.limits) {
      const budget = this.#attachedBudget('api_key', p.keyId, 'the API key’s usage limit', p, keyBudget);
      const period: Period = { key: `R${p.limits.reset_usage}`, start: null, end: null };
      plans.push(this.#budgetPlan(d, budget, keyBudgetCounter(p.keyId, p.limits.reset_usage), 'key', `api_key:${p.keyId}`, period));
    }
    policies.workspace.usage.forEach((u, i) => {
      const budget = this.#attachedBudget('workspace', p.workspaceId, 'the workspace’s usage limit', p, u);
      const period = budgetPeriod(u, calendarAnchor(u), d.now);
      plans.push(this.#budgetPlan(d, budget, workspaceBudgetCounter(p.workspaceId, i, period.key), 'workspace', `workspace_id:${p.workspaceId}`, period));
    });
    return plans;
  }

  #attachedBudget(source: AlertSource, sourceId: string, label: string, p: Demand['principal'], u: AttachedUsageLimit): Budget {
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

  #ratePlan(d: Demand, label: string, type: 'requests' | 'tokens', unit: WindowUnit, value: number, pk: (windowStart: number) => string): RatePlan {
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

  #budgetPlan(d: Demand, budget: Budget, key: CounterKey, entityId: string, valueKey: string, period: Period): BudgetPlan {
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

  #refusal(refused: { plan: Plan; result: { used: number } }[], now: number): RateLimitedError | UsageExhaustedError {
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

  async #release(held: readonly Held[]): Promise<void> {
    await Promise.all(
      held.map((h) =>
        this.#d.repo.adjust(h.plan.key, -h.plan.amount).catch((err: unknown) => this.#d.logger.error('limits: release failed', { error: err })),
      ),
    );
  }

  /** What a reservation turns into once the request is over. */
  #actual(plan: Plan, record: GatewayRecord): number {
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
      return this.#d.costs().micros({
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

  async #settle(record: GatewayRecord, held: readonly Held[]): Promise<void> {
    const now = this.#d.clock.now();
    await Promise.all(
      held.map(async (h) => {
        try {
          // Most settlements change nothing (a request counted as reserved): no counter call then.
          const delta = this.#actual(h.plan, record) - h.plan.amount;
          const changed = delta === 0 ? undefined : await this.#d.repo.adjust(h.plan.key, delta);
          if (h.plan.kind === 'budget') await this.#checkAlerts(h.plan, changed ?? h.after, now);
        } catch (err) {
          this.#d.logger.error('limits: settle failed', { error: err, counter: h.plan.key.pk });
        }
      }),
    );
  }

  async #checkAlerts(plan: BudgetPlan, counter: Item, now: number): Promise<void> {
    const used = typeof counter.used === 'number' ? counter.used : 0;
    const { budget } = plan;
    if (budget.alertThreshold !== null && !counter.threshold_alert_sent && used >= toUnits(budget, budget.alertThreshold)) {
      await this.#alertOnce(plan, 'threshold', used, now);
    }
    if (!counter.exhausted_alert_sent && used >= plan.limit) await this.#alertOnce(plan, 'exhausted', used, now);
  }

  /** Queues the alert if this caller is the one that set the counter's flag. */
  async #alertOnce(plan: BudgetPlan, kind: AlertKind, used: number, now: number): Promise<void> {
    const flag = kind === 'threshold' ? 'threshold_alert_sent' : 'exhausted_alert_sent';
    if (!(await this.#d.repo.markAlert(plan.key, flag))) return;
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
      await this.#d.alert(alert);
    } catch (err) {
      // Not queued: clear the flag so that the next settlement reports the crossing instead.
      await this.#d.repo.unmarkAlert(plan.key, flag).catch(() => undefined);
      throw err;
    }
  }

  /** Work that must not delay the answer: tracked for `flush`, failures logged. */
  #later(p: Promise<void>): void {
    const tracked = p
      .catch((err: unknown) => this.#d.logger.error('limits: background work failed', { error: err }))
      .finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }
}
