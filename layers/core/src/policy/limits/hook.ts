/**
 * Rate limits and budgets at the gateway, as a GatewayHook. The limits that apply to a request are
 * the workspace's policies whose conditions hold, the API key's own `rate_limits`/`usage_limits`
 * and the workspace's own ones (planning: plans.ts); a managed provider's own budget applies per
 * target (`admitTarget`).
 *
 * admit: the workspace's policies and limits come from memory; a request that no limit applies to
 * makes no counter call. For each limit it reserves in the counter of the current window (rate) or
 * period (budget) with one conditional UpdateItem, all in parallel. If any refuses, the
 * reservations already taken are given back and the request is refused (429 for a rate limit, 402
 * for a budget) before any provider call.
 *
 * complete: each reservation is settled to what the request really used (settle.ts), which may
 * cross a budget's threshold or exhaust it (crossings.ts).
 */
import type { Logger } from '../../ports/logger.ts';
import type { FeatureFlags } from '../../config.ts';
import type { GatewayHook, GatewayRecord, TargetAdmission } from '../../kernel/lifecycle.ts';
import type { RateLimitedError, UsageExhaustedError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import type { Clock } from '../../ports/clock.ts';
import type { LimitsRepository, ReserveResult } from '../../store/limits.ts';
import type { UsageAlert } from './alerts.ts';
import { parseAttached, type AttachedLimits } from '../../kernel/limits.ts';
import { providerBudgetCounter } from './counters.ts';
import { alertOnce } from './crossings.ts';
import { estimateTokens, type CostEstimator, type TokenEstimate } from './estimate.ts';
import { attachedBudget, budgetPlan, planRequest, rateHeaders, refusal, type BudgetPlan, type Demand, type LimitFlags, type Plan } from './plans.ts';
import { isLeased, LeasePool } from './leases.ts';
import { isEmpty, type PolicyCache } from './policy-cache.ts';
import { settle, settledAmount, type Held, type SettleDeps } from './settle.ts';
import { budgetPeriod, calendarAnchor } from './windows.ts';

export { anchorOf, currentPeriod, fromUnits, keyBudgetCounter, providerBudgetCounter, toUnits, workspaceBudgetCounter } from './counters.ts';

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

type Refused = { plan: Plan; result: Extract<ReserveResult, { ok: false }> };

export class LimitsHook implements GatewayHook {
  readonly name = 'limits';
  readonly #d: LimitsHookDeps;
  readonly #held = new WeakMap<GatewayRecord, Held[]>();
  readonly #pending = new Set<Promise<void>>();
  /** A warm key's principal is the same object on every request: its limits are parsed once. */
  readonly #keyLimitsOf = new WeakMap<Principal, AttachedLimits>();
  /** This instance's leases of the counters of policies in approximate mode. */
  readonly #leases: LeasePool;
  readonly #settleDeps: SettleDeps;

  constructor(deps: LimitsHookDeps) {
    this.#d = deps;
    this.#leases = new LeasePool(deps.repo, deps.clock);
    this.#settleDeps = { ...deps, giveBack: (plan, amount) => plan.kind === 'rate' && isLeased(plan) && this.#leases.giveBack(plan, amount) };
  }

  /** Policies of both kinds need POLICY_ENABLED; budgets of every source USAGE_LIMITS_ENABLED. */
  get #on(): LimitFlags {
    return { policies: this.#d.features.policy, budgets: this.#d.features.usageLimits };
  }

  async admit(record: GatewayRecord): Promise<void | Record<string, string>> {
    const p = record.principal;
    if (!p?.workspaceId) return;
    const key = this.#keyLimits(p);
    const policies = await this.#d.policies.forWorkspace(p.organisationId, p.workspaceId);
    const keyHasLimits = key !== undefined && (key.usage.length > 0 || key.rate.length > 0);
    if (isEmpty(policies) && !keyHasLimits) return;

    const demand = this.#demand(record, p as Demand['principal']);
    const plans = planRequest(demand, policies, key, this.#on);
    if (plans.length === 0) return;
    const { held, refused, failure } = await this.#reserve(plans);
    if (refused.length === 0 && failure === undefined) {
      this.#held.set(record, held);
      // The figures of the reservations just taken, for the answer's `x-ratelimit-*` headers.
      const rates = held.flatMap((h) =>
        h.plan.kind === 'rate' ? [{ plan: h.plan, used: typeof h.after.used === 'number' ? h.after.used : h.plan.amount }] : [],
      );
      return rates.length > 0 ? rateHeaders(rates, demand.now) : undefined;
    }
    // All or nothing: what was taken for a request that does not go ahead is given back.
    await this.#release(held);
    for (const r of refused) this.#alertExhausted(r, demand.now);
    // A counter store that cannot be reached refuses rather than letting spend run unchecked.
    if (failure !== undefined) throw failure;
    throw refusal(refused, demand.now);
  }

  /**
   * A managed provider's budget, reserved when a target resolves to it (after admit: the provider
   * is only known per target). The refusal is answered rather than thrown, so that a fallback can
   * try its next target. Settled with the request's other reservations.
   */
  async admitTarget(record: GatewayRecord, t: TargetAdmission): Promise<UsageExhaustedError | undefined> {
    const p = record.principal;
    const b = t.budget;
    if (!b || !this.#on.budgets || !p?.workspaceId) return undefined;
    const held = this.#held.get(record) ?? [];
    // A retry of the same target holds its reservation already.
    if (held.some((h) => h.plan.kind === 'budget' && h.plan.targetPath === t.targetPath)) return undefined;
    const demand = this.#demand(record, p as Demand['principal'], { provider: t.provider, model: t.model ?? record.model });
    const budget = attachedBudget('provider', b.slug, `the provider @${b.slug}’s usage limit`, demand.principal, b.limit);
    const period = budgetPeriod(b.limit, calendarAnchor(b.limit), demand.now);
    const plan: BudgetPlan = {
      ...budgetPlan(demand, budget, providerBudgetCounter(b.providerId, period.key), 'provider', `provider:@${b.slug}`, period),
      targetPath: t.targetPath,
    };
    const r = await this.#d.repo.reserve(plan.key, plan.amount, plan.limit, plan.set);
    if (r.ok) {
      held.push({ plan, after: r.item });
      this.#held.set(record, held);
      return undefined;
    }
    this.#alertExhausted({ plan, result: r }, demand.now);
    return refusal([{ plan, result: r }], demand.now) as UsageExhaustedError;
  }

  /**
   * A session's usage so far: token and cost reservations grow to it (never shrink before the
   * end, which settles them), and a budget or token rate it has reached ends the session.
   */
  async progress(record: GatewayRecord): Promise<RateLimitedError | UsageExhaustedError | undefined> {
    const held = this.#held.get(record);
    if (!held) return undefined;
    const costs = this.#d.costs();
    const reached: { plan: Plan; result: { used: number } }[] = [];
    await Promise.all(
      held.map(async (h, i) => {
        if ((h.plan.kind === 'rate' ? h.plan.type : h.plan.budget.type) === 'requests') return;
        const delta = settledAmount(h.plan, record, costs) - h.plan.amount;
        if (delta <= 0) return;
        const after = (await this.#d.repo.adjust(h.plan.key, delta)) ?? h.after;
        held[i] = { plan: { ...h.plan, amount: h.plan.amount + delta }, after };
        const used = typeof after.used === 'number' ? after.used : 0;
        if (used >= h.plan.limit) reached.push({ plan: h.plan, result: { used } });
      }),
    );
    return reached.length > 0 ? refusal(reached, this.#d.clock.now()) : undefined;
  }

  complete(record: GatewayRecord): void {
    const held = this.#held.get(record);
    if (!held) return;
    this.#held.delete(record);
    this.#later(settle(this.#settleDeps, record, held));
  }

  /** Resolves once every settlement and alert started so far is done (Lambda, tests). */
  async flush(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /** What the request may consume, estimated lazily and once; `priced` names the provider and model to price. */
  #demand(record: GatewayRecord, p: Demand['principal'], priced: { provider?: string | undefined; model?: string | undefined } = record): Demand {
    let tokens: TokenEstimate | undefined;
    let cost: number | undefined;
    const demand: Demand = {
      record,
      principal: p,
      now: this.#d.clock.now(),
      tokens: () => (tokens ??= estimateTokens(record.endpoint, record.request)),
      cost: () => {
        const t = demand.tokens();
        cost ??= this.#d.costs().micros({
          organisationId: p.organisationId,
          workspaceId: p.workspaceId ?? undefined,
          provider: priced.provider,
          model: priced.model,
          promptTokens: t.prompt,
          completionTokens: t.completion,
        });
        return cost;
      },
    };
    return demand;
  }

  /** Reserves every plan in parallel. */
  async #reserve(plans: readonly Plan[]): Promise<{ held: Held[]; refused: Refused[]; failure: unknown }> {
    const results = await Promise.allSettled(
      plans.map((plan) => (isLeased(plan) ? this.#leases.take(plan) : this.#d.repo.reserve(plan.key, plan.amount, plan.limit, plan.set))),
    );
    const held: Held[] = [];
    const refused: Refused[] = [];
    let failure: unknown;
    results.forEach((r, i) => {
      const plan = plans[i] as Plan;
      if (r.status === 'rejected') failure ??= r.reason;
      else if (r.value.ok) held.push({ plan, after: r.value.item });
      else refused.push({ plan, result: r.value });
    });
    return { held, refused, failure };
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

  /** A refused budget is exhausted: reported once, off the request path. */
  #alertExhausted({ plan, result }: Refused, now: number): void {
    if (plan.kind === 'budget' && result.item && !result.item.exhausted_alert_sent) this.#later(alertOnce(this.#d, plan, 'exhausted', result.used, now));
  }

  async #release(held: readonly Held[]): Promise<void> {
    await Promise.all(
      held.map(async (h) =>
        this.#settleDeps.giveBack?.(h.plan, h.plan.amount)
          ? undefined
          : this.#d.repo.adjust(h.plan.key, -h.plan.amount).catch((err: unknown) => this.#d.logger.error('limits: release failed', { error: err })),
      ),
    );
  }

  /** Work that must not delay the answer: tracked for `flush`, failures logged. */
  #later(p: Promise<void>): void {
    const tracked = p
      .catch((err: unknown) => this.#d.logger.error('limits: background work failed', { error: err }))
      .finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }
}
