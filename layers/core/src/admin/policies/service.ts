/**
 * Rate limits and usage limits policies: who may manage which, what a policy may say, and what
 * changing one does to its counters and alerts. A policy belongs to one workspace and applies to
 * that workspace's gateway requests whose conditions hold.
 */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, NotFoundError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../policy/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import { currentPeriod, fromUnits, toUnits } from '../../policy/limits/hook.ts';
import { entityIdOf, type PolicyCondition } from '../../policy/limits/match.ts';
import { budgetPeriod, defaultAnchor, resets, type ResetRule } from '../../policy/limits/windows.ts';
import type {
  AlertFlag,
  PolicyStatus,
  RateLimitPolicyRecord,
  UsageCounterRecord,
  UsageLimitPolicyRecord,
} from '../../store/limits.ts';
import type { CreateRateLimitBody, CreateUsageLimitBody, UpdateRateLimitBody, UpdateUsageLimitBody } from './schema.ts';

export const RATE_OBJECT = 'policy_rate_limits';
export const USAGE_OBJECT = 'policy_usage_limits';

/** With an API key, the key's workspace and organisation stand in for absent `workspace_id` and `organisation_id`. */
const viaApiKey = (p: Principal): boolean => p.kind === 'api-key';

export type RateLimitPolicyView = Omit<RateLimitPolicyRecord, 'created_by' | 'last_updated_by'> & { object: typeof RATE_OBJECT };

export const rateView = (r: RateLimitPolicyRecord): RateLimitPolicyView => ({
  object: RATE_OBJECT,
  id: r.id,
  name: r.name,
  conditions: r.conditions,
  group_by: r.group_by,
  type: r.type,
  unit: r.unit,
  value: r.value,
  status: r.status,
  workspace_id: r.workspace_id,
  organisation_id: r.organisation_id,
  created_at: r.created_at,
  last_updated_at: r.last_updated_at,
});

export interface EntityUsage {
  current_usage: number;
  status: 'active' | 'exhausted';
  is_threshold_alerts_sent: boolean;
  is_exhausted_alerts_sent: boolean;
}

export type UsageLimitPolicyView = Omit<UsageLimitPolicyRecord, 'created_by' | 'last_updated_by' | 'reset_anchor'> & {
  object: typeof USAGE_OBJECT;
  value_key_usage_map?: Record<string, EntityUsage>;
};

export const usageView = (r: UsageLimitPolicyRecord): UsageLimitPolicyView => ({
  object: USAGE_OBJECT,
  id: r.id,
  name: r.name,
  conditions: r.conditions,
  group_by: r.group_by,
  type: r.type,
  credit_limit: r.credit_limit,
  alert_threshold: r.alert_threshold,
  periodic_reset: r.periodic_reset,
  periodic_reset_days: r.periodic_reset_days,
  next_usage_reset_at: r.next_usage_reset_at,
  last_reset_at: r.last_reset_at,
  alert_emails: r.alert_emails,
  status: r.status,
  workspace_id: r.workspace_id,
  organisation_id: r.organisation_id,
  created_at: r.created_at,
  last_updated_at: r.last_updated_at,
});

export interface EntityView extends EntityUsage {
  object: 'policy_usage_limits_entity';
  id: string;
  value_key: string;
  last_reset_at: string | null;
}

function usageOf(policy: UsageLimitPolicyRecord, c: UsageCounterRecord): EntityUsage {
  return {
    current_usage: fromUnits(policy, c.used),
    status: c.used >= toUnits(policy, policy.credit_limit) ? 'exhausted' : 'active',
    is_threshold_alerts_sent: c.threshold_alert_sent === true,
    is_exhausted_alerts_sent: c.exhausted_alert_sent === true,
  };
}

export const entityView = (policy: UsageLimitPolicyRecord, c: UsageCounterRecord): EntityView => ({
  object: 'policy_usage_limits_entity',
  id: c.entity_id,
  value_key: c.value_key,
  ...usageOf(policy, c),
  last_reset_at: c.last_reset_at ?? null,
});

export interface ListFilter {
  workspace_id?: string | undefined;
  status: PolicyStatus;
}

export class PolicyService {
  readonly #deps: CoreDeps;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
  }

  get #repo() {
    return this.#deps.limits.repo;
  }

  #now(): string {
    return new Date(this.#deps.clock.now()).toISOString();
  }

  /** The workspace (id) and organisation a new policy belongs to. */
  async #owner(caller: Principal, body: { workspace_id?: string | undefined; organisation_id?: string | undefined }): Promise<string> {
    const problems: FieldProblem[] = [];
    if (!viaApiKey(caller)) {
      if (body.workspace_id === undefined) problems.push({ path: 'workspace_id', message: 'is required when not authenticating with an API key' });
      if (body.organisation_id === undefined) problems.push({ path: 'organisation_id', message: 'is required when not authenticating with an API key' });
    } else if (body.workspace_id === undefined && !caller.workspaceId) {
      problems.push({ path: 'workspace_id', message: 'is required when the caller is an organisation key' });
    }
    if (problems.length) throw new ValidationError(problems);
    if (body.organisation_id !== undefined && body.organisation_id !== caller.organisationId) {
      throw new ForbiddenError('organisation_id must be the caller’s own organisation', { param: 'organisation_id' });
    }
    const requested = body.workspace_id ?? caller.workspaceId;
    if (!requested) throw ValidationError.field('workspace_id', 'is required');
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, requested);
    if (!ws) throw new NotFoundError(`Workspace ${requested} not found`, { param: 'workspace_id' });
    if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
      throw new ForbiddenError('Workspace keys may only manage policies of their own workspace');
    }
    return ws.id;
  }

  /** Normalizes conditions: workspace slugs become ids; values that could never match are refused. */
  async #conditions(caller: Principal, workspaceId: string, list: readonly PolicyCondition[]): Promise<PolicyCondition[]> {
    const problems: FieldProblem[] = [];
    const out: PolicyCondition[] = [];
    for (const [i, c] of list.entries()) {
      let value = c.value;
      if (c.value !== '*' && c.key === 'workspace_id') {
        const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, c.value);
        if (ws?.id !== workspaceId) problems.push({ path: `conditions[${i}].value`, message: 'must name the policy’s own workspace (a policy applies to its workspace only)' });
        else value = ws.id;
      } else if (c.value !== '*' && c.key === 'organisation_id' && c.value !== caller.organisationId) {
        problems.push({ path: `conditions[${i}].value`, message: 'must be the policy’s organisation' });
      } else if (c.value !== '*' && c.key === 'api_key') {
        const key = await this.#deps.repos.apiKeys.getById(caller.organisationId, c.value);
        if (!key || key.workspace_id !== workspaceId) problems.push({ path: `conditions[${i}].value`, message: 'must be the id of an API key of the policy’s workspace' });
      }
      out.push({ key: c.key, value });
    }
    if (problems.length) throw new ValidationError(problems);
    return out;
  }

  #visible(caller: Principal, rec: { workspace_id: string; status: PolicyStatus } | undefined, status: PolicyStatus): boolean {
    if (!rec || rec.status !== status) return false;
    return isOrganisationPrincipal(caller) || rec.workspace_id === caller.workspaceId;
  }

  async #listWorkspaceFor(caller: Principal, workspace: string | undefined): Promise<string | undefined> {
    if (workspace === undefined) return isOrganisationPrincipal(caller) ? undefined : (caller.workspaceId ?? undefined);
    const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, workspace);
    if (!ws) throw new NotFoundError(`Workspace ${workspace} not found`, { param: 'workspace_id' });
    if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
      throw new ForbiddenError('Workspace keys may only list policies of their own workspace');
    }
    return ws.id;
  }

  // ---- rate limits -----------------------------------------------------------------------------

  async createRate(caller: Principal, body: CreateRateLimitBody) {
    const workspaceId = await this.#owner(caller, body);
    const now = this.#now();
    const rec: RateLimitPolicyRecord = {
      id: randomUUID(),
      name: body.name ?? null,
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      conditions: await this.#conditions(caller, workspaceId, body.conditions),
      group_by: body.group_by,
      type: body.type,
      unit: body.unit,
      value: body.value,
      status: 'active',
      created_at: now,
      last_updated_at: now,
      created_by: caller.keyId,
      last_updated_by: caller.keyId,
    };
    auditTarget(rec.id, workspaceId);
    await this.#repo.createRate(rec);
    this.#deps.limits.policies.invalidate(workspaceId);
    return { id: rec.id, object: RATE_OBJECT };
  }

  async getRate(caller: Principal, id: string, status: PolicyStatus = 'active'): Promise<RateLimitPolicyRecord> {
    const rec = await this.#repo.getRate(caller.organisationId, id);
    if (!rec || !this.#visible(caller, rec, status)) throw new NotFoundError(`Rate limits policy ${id} not found`);
    return rec;
  }

  async listRate(caller: Principal, filter: ListFilter & { type?: string | undefined; unit?: string | undefined }): Promise<RateLimitPolicyRecord[]> {
    const ws = await this.#listWorkspaceFor(caller, filter.workspace_id);
    const all = ws === undefined ? await this.#repo.listRateByOrganisation(caller.organisationId) : (await this.#repo.listWorkspace(ws)).rate;
    return all.filter((p) => p.status === filter.status && (!filter.type || p.type === filter.type) && (!filter.unit || p.unit === filter.unit));
  }

  async updateRate(caller: Principal, id: string, body: UpdateRateLimitBody): Promise<void> {
    const cur = await this.getRate(caller, id);
    await this.#sameOwner(caller, cur, body);
    const next: RateLimitPolicyRecord = {
      ...cur,
      name: body.name === undefined ? cur.name : body.name,
      conditions: body.conditions ? await this.#conditions(caller, cur.workspace_id, body.conditions) : cur.conditions,
      group_by: body.group_by ?? cur.group_by,
      type: body.type ?? cur.type,
      unit: body.unit ?? cur.unit,
      value: body.value ?? cur.value,
      last_updated_at: this.#now(),
      last_updated_by: caller.keyId,
    };
    auditTarget(cur.id, cur.workspace_id);
    await this.#repo.putRate(next);
    this.#deps.limits.policies.invalidate(cur.workspace_id);
  }

  async deleteRate(caller: Principal, id: string): Promise<void> {
    const cur = await this.getRate(caller, id);
    auditTarget(cur.id, cur.workspace_id);
    await this.#repo.putRate({ ...cur, status: 'archived', last_updated_at: this.#now(), last_updated_by: caller.keyId });
    this.#deps.limits.policies.invalidate(cur.workspace_id);
  }

  async #sameOwner(caller: Principal, cur: RateLimitPolicyRecord, body: UpdateRateLimitBody): Promise<void> {
    const problems: FieldProblem[] = [];
    if (body.organisation_id !== undefined && body.organisation_id !== cur.organisation_id) {
      problems.push({ path: 'organisation_id', message: 'cannot be changed' });
    }
    if (body.workspace_id !== undefined && body.workspace_id !== cur.workspace_id) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, body.workspace_id);
      if (ws?.id !== cur.workspace_id) problems.push({ path: 'workspace_id', message: 'cannot be changed' });
    }
    if (problems.length) throw new ValidationError(problems);
  }

  // ---- usage limits ----------------------------------------------------------------------------

  /** The anchor and the next reset for a reset rule set now (or at `requested`). */
  #schedule(rule: ResetRule, requested: string | null | undefined): { reset_anchor: string | null; next_usage_reset_at: string | null } {
    if (!resets(rule)) return { reset_anchor: null, next_usage_reset_at: null };
    const now = this.#deps.clock.now();
    const anchor = requested ? Date.parse(requested) : (defaultAnchor(rule, now) ?? now);
    const period = budgetPeriod(rule, anchor, now);
    return { reset_anchor: new Date(anchor).toISOString(), next_usage_reset_at: period.end === null ? null : new Date(period.end).toISOString() };
  }

  async createUsage(caller: Principal, body: CreateUsageLimitBody) {
    const workspaceId = await this.#owner(caller, body);
    const now = this.#now();
    const rule: ResetRule = { periodic_reset: body.periodic_reset ?? null, periodic_reset_days: body.periodic_reset_days ?? null };
    const rec: UsageLimitPolicyRecord = {
      id: randomUUID(),
      name: body.name ?? null,
      organisation_id: caller.organisationId,
      workspace_id: workspaceId,
      conditions: await this.#conditions(caller, workspaceId, body.conditions),
      group_by: body.group_by,
      type: body.type,
      credit_limit: body.credit_limit,
      alert_threshold: body.alert_threshold ?? null,
      ...rule,
      ...this.#schedule(rule, body.next_usage_reset_at),
      last_reset_at: null,
      alert_emails: body.alert_emails ?? [],
      status: 'active',
      created_at: now,
      last_updated_at: now,
      created_by: caller.keyId,
      last_updated_by: caller.keyId,
    };
    auditTarget(rec.id, workspaceId);
    await this.#repo.createUsage(rec);
    this.#deps.limits.policies.invalidate(workspaceId);
    return { id: rec.id, object: USAGE_OBJECT };
  }

  async getUsage(caller: Principal, id: string, status: PolicyStatus = 'active'): Promise<UsageLimitPolicyRecord> {
    const rec = await this.#repo.getUsage(caller.organisationId, id);
    if (!rec || !this.#visible(caller, rec, status)) throw new NotFoundError(`Usage limits policy ${id} not found`);
    return rec;
  }

  async usageMap(policy: UsageLimitPolicyRecord): Promise<Record<string, EntityUsage>> {
    const counters = await this.#repo.usageCounters(policy.id, currentPeriod(policy, this.#deps.clock.now()).key);
    return Object.fromEntries(counters.map((c) => [c.value_key, usageOf(policy, c)]));
  }

  async listUsage(caller: Principal, filter: ListFilter & { type?: string | undefined }): Promise<UsageLimitPolicyRecord[]> {
    const ws = await this.#listWorkspaceFor(caller, filter.workspace_id);
    const all = ws === undefined ? await this.#repo.listUsageByOrganisation(caller.organisationId) : (await this.#repo.listWorkspace(ws)).usage;
    return all.filter((p) => p.status === filter.status && (!filter.type || p.type === filter.type));
  }

  async updateUsage(caller: Principal, id: string, body: UpdateUsageLimitBody): Promise<void> {
    const cur = await this.getUsage(caller, id);
    const next: UsageLimitPolicyRecord = {
      ...cur,
      name: body.name === undefined ? cur.name : body.name,
      credit_limit: body.credit_limit ?? cur.credit_limit,
      alert_threshold: body.alert_threshold === undefined ? cur.alert_threshold : body.alert_threshold,
      alert_emails: body.alert_emails ?? cur.alert_emails,
      last_updated_at: this.#now(),
      last_updated_by: caller.keyId,
    };
    // Setting one reset rule replaces the other.
    if (body.periodic_reset !== undefined) {
      next.periodic_reset = body.periodic_reset;
      if (body.periodic_reset !== null && body.periodic_reset_days === undefined) next.periodic_reset_days = null;
    }
    if (body.periodic_reset_days !== undefined) {
      next.periodic_reset_days = body.periodic_reset_days;
      if (body.periodic_reset_days !== null && body.periodic_reset === undefined) next.periodic_reset = null;
    }
    const problems: FieldProblem[] = [];
    if (next.alert_threshold !== null && next.alert_threshold >= next.credit_limit) {
      problems.push({ path: body.alert_threshold != null ? 'alert_threshold' : 'credit_limit', message: body.alert_threshold != null ? 'must be less than credit_limit' : 'must be greater than alert_threshold' });
    }
    if (next.type === 'tokens' && !Number.isInteger(next.credit_limit)) problems.push({ path: 'credit_limit', message: 'must be an integer for a tokens limit' });
    if (body.next_usage_reset_at != null && !resets(next)) problems.push({ path: 'next_usage_reset_at', message: 'needs periodic_reset or periodic_reset_days' });
    if (problems.length) throw new ValidationError(problems);

    const ruleChanged = body.periodic_reset !== undefined || body.periodic_reset_days !== undefined || body.next_usage_reset_at !== undefined;
    if (ruleChanged) Object.assign(next, this.#schedule(next, body.next_usage_reset_at));

    let entity: string | undefined;
    if (body.reset_usage_for_value !== undefined) entity = entityIdOf(body.reset_usage_for_value);
    auditTarget(cur.id, cur.workspace_id);
    await this.#repo.putUsage(next);

    // Alerts: a raised limit clears both, a raised or removed threshold clears the threshold alert.
    const period = currentPeriod(next, this.#deps.clock.now()).key;
    const flags: AlertFlag[] = [];
    if (next.credit_limit > cur.credit_limit) flags.push('threshold_alert_sent', 'exhausted_alert_sent');
    else if (cur.alert_threshold !== null && (next.alert_threshold === null || next.alert_threshold > cur.alert_threshold)) flags.push('threshold_alert_sent');
    await this.#repo.clearAlerts(next.id, period, flags);
    if (entity !== undefined) await this.#repo.resetCounter(next.id, period, entity, this.#now());
    this.#deps.limits.policies.invalidate(cur.workspace_id);
  }

  async deleteUsage(caller: Principal, id: string): Promise<void> {
    const cur = await this.getUsage(caller, id);
    auditTarget(cur.id, cur.workspace_id);
    await this.#repo.putUsage({ ...cur, status: 'archived', last_updated_at: this.#now(), last_updated_by: caller.keyId });
    this.#deps.limits.policies.invalidate(cur.workspace_id);
  }

  /** The groups counted in the current period, with their usage. */
  async entities(caller: Principal, id: string, filter: { status?: 'active' | 'exhausted' | undefined; search?: string | undefined }): Promise<EntityView[]> {
    const policy = await this.getUsage(caller, id);
    const counters = await this.#repo.usageCounters(policy.id, currentPeriod(policy, this.#deps.clock.now()).key);
    const search = filter.search?.toLowerCase();
    return counters
      .map((c) => entityView(policy, c))
      .filter((e) => (!filter.status || e.status === filter.status) && (!search || e.value_key.toLowerCase().includes(search)))
      .sort((a, b) => a.value_key.localeCompare(b.value_key));
  }

  async resetEntity(caller: Principal, id: string, entityId: string): Promise<void> {
    const policy = await this.getUsage(caller, id);
    const done = await this.#repo.resetCounter(policy.id, currentPeriod(policy, this.#deps.clock.now()).key, entityId, this.#now());
    if (!done) throw new NotFoundError(`Entity ${entityId} of usage limits policy ${id} not found`);
  }
}
