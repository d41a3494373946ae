/**
 * The two kinds of policy as data: what differs between rate limits and usage limits policies
 * (their paths, flags, bodies, list filters, views, storage and the fields an update may change).
 * The service (service.ts) and the routes (routes.ts) are written once over this table.
 */
import * as z from 'zod';
import type { FeatureName } from '../route.ts';
import { ValidationError, type FieldProblem } from '../../http/errors.ts';
import { currentPeriod, fromUnits, toUnits } from '../../policy/limits/hook.ts';
import { entityIdOf, type PolicyCondition, type PolicyGroupBy } from '../../policy/limits/match.ts';
import { budgetPeriod, defaultAnchor, resets, type ResetRule } from '../../policy/limits/windows.ts';
import { DEFAULT_LEASE_SIZE } from '../../policy/limits/leases.ts';
import type {
  AlertFlag,
  LimitsRepository,
  PolicyBase,
  RateLimitMode,
  RateLimitPolicyRecord,
  UsageCounterRecord,
  UsageLimitPolicyRecord,
} from '../../store/limits.ts';
import {
  createRateLimitSchema,
  createUsageLimitSchema,
  updateRateLimitSchema,
  updateUsageLimitSchema,
  type CreateRateLimitBody,
  type CreateUsageLimitBody,
  type UpdateRateLimitBody,
  type UpdateUsageLimitBody,
} from './schema.ts';

export const RATE_OBJECT = 'policy_rate_limits';
export const USAGE_OBJECT = 'policy_usage_limits';

/** What every policy record has, whatever its kind. */
export type PolicyRecord = PolicyBase & { workspace_id: string | null };

/** The fields every create body has. */
export interface CreateCommon {
  name?: string | null | undefined;
  conditions: PolicyCondition[];
  group_by: PolicyGroupBy[];
  workspace_id?: string | undefined;
  organisation_id?: string | undefined;
}

/** What an update needs from the service: the clock, the caller and the condition rules. */
export interface UpdateTools {
  nowMs: number;
  now: string;
  keyId: string;
  /** Normalizes and checks conditions for the policy's workspace (service.ts). */
  conditions(list: readonly PolicyCondition[]): Promise<PolicyCondition[]>;
  /** Resolves a workspace id or slug of the caller's organisation. */
  workspaceId(idOrSlug: string): Promise<string | undefined>;
}

export interface PolicyKind<R extends PolicyRecord, C extends CreateCommon, U> {
  object: string;
  /** `Rate limits policy`: in 404 messages. */
  label: string;
  /** The path segment under `/v1/policies/`. */
  segment: string;
  /** The name of the id path parameter in docs/design/spec.md#admin-resources, used as the field of its 400. */
  idParam: string;
  /** Names the resource in audit entries and in the 403 of a disabled feature. */
  resource: string;
  /** The flags that must be on, in the order they are checked. */
  features: readonly FeatureName[];
  /**
   * An API key without a workspace (an organisation key) creates an organisation-wide policy when
   * neither the body nor a `workspace_id` condition names one (docs/design/spec.md#admin-resources, rate limits policies).
   */
  organisationWide: boolean;
  createSchema: z.ZodType<C>;
  updateSchema: z.ZodType<U>;
  /** Kind-specific list filters, read from the query string. */
  listFilters: z.ZodType<Record<string, string | undefined>>;
  /** Whether a policy passes the kind-specific list filters. */
  matches(rec: R, filters: Record<string, string | undefined>): boolean;
  view(rec: R): object;
  /** The record of a new policy, from the fields every kind has and the body. */
  build(common: PolicyRecord, body: C, nowMs: number): R;
  /** The record after an update (the body is validated against the stored policy here). */
  change(cur: R, body: U, tools: UpdateTools): Promise<R>;
  /** Work after the changed record is saved (counters, alerts). */
  afterChange?(repo: LimitsRepository, cur: R, next: R, body: U, tools: UpdateTools): Promise<void>;
  store: {
    create(repo: LimitsRepository, rec: R): Promise<void>;
    get(repo: LimitsRepository, orgId: string, id: string): Promise<R | undefined>;
    put(repo: LimitsRepository, rec: R): Promise<void>;
    listOrganisation(repo: LimitsRepository, orgId: string): Promise<R[]>;
    listWorkspace(repo: LimitsRepository, workspaceId: string): Promise<R[]>;
  };
}

const throwRequired = (path: string): never => {
  throw ValidationError.field(path, 'is required');
};

const optionalEnum = <const T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: `must be one of ${values.join(', ')}` }).optional();

// ---- rate limits -------------------------------------------------------------------------------

export type RateLimitPolicyView = Omit<RateLimitPolicyRecord, 'created_by' | 'last_updated_by' | 'mode' | 'lease_size'> & {
  mode: RateLimitMode;
  /** The units a lease takes in approximate mode (the default when not set); null in exact mode. */
  lease_size: number | null;
  object: typeof RATE_OBJECT;
  /** `organisation` for a policy without a workspace: it applies to every workspace. */
  applies_to: 'workspace' | 'organisation';
};

export const rateView = (r: RateLimitPolicyRecord): RateLimitPolicyView => ({
  object: RATE_OBJECT,
  id: r.id,
  name: r.name,
  conditions: r.conditions,
  group_by: r.group_by,
  type: r.type,
  unit: r.unit,
  value: r.value,
  mode: r.mode ?? 'exact',
  lease_size: r.mode === 'approximate' ? (r.lease_size ?? DEFAULT_LEASE_SIZE) : null,
  status: r.status,
  workspace_id: r.workspace_id,
  organisation_id: r.organisation_id,
  applies_to: r.workspace_id === null ? 'organisation' : 'workspace',
  created_at: r.created_at,
  last_updated_at: r.last_updated_at,
});

/** The workspace and organisation of a policy cannot move. */
async function sameOwner(cur: RateLimitPolicyRecord, body: UpdateRateLimitBody, tools: UpdateTools): Promise<void> {
  const problems: FieldProblem[] = [];
  if (body.organisation_id !== undefined && body.organisation_id !== cur.organisation_id) {
    problems.push({ path: 'organisation_id', message: 'cannot be changed' });
  }
  if (body.workspace_id !== undefined && body.workspace_id !== cur.workspace_id) {
    if ((await tools.workspaceId(body.workspace_id)) !== (cur.workspace_id ?? undefined)) problems.push({ path: 'workspace_id', message: 'cannot be changed' });
  }
  if (problems.length) throw new ValidationError(problems);
}

export const RATE_LIMITS: PolicyKind<RateLimitPolicyRecord, CreateRateLimitBody, UpdateRateLimitBody> = {
  object: RATE_OBJECT,
  label: 'Rate limits policy',
  segment: 'rate-limits',
  idParam: 'rateLimitsPolicyId',
  resource: 'rate_limits_policies',
  features: ['policy'],
  organisationWide: true,
  createSchema: createRateLimitSchema,
  updateSchema: updateRateLimitSchema,
  listFilters: z.object({ type: optionalEnum(['requests', 'tokens']), unit: optionalEnum(['rpm', 'rph', 'rpd', 'rpw']) }),
  matches: (p, f) => (!f.type || p.type === f.type) && (!f.unit || p.unit === f.unit),
  view: rateView,
  build: (common, body) => ({
    ...common,
    type: body.type,
    unit: body.unit,
    value: body.value,
    mode: body.mode ?? 'exact',
    lease_size: body.lease_size ?? null,
  }),
  async change(cur, body, tools) {
    await sameOwner(cur, body, tools);
    const mode = body.mode ?? cur.mode ?? 'exact';
    if (body.lease_size != null && mode !== 'approximate') throw ValidationError.field('lease_size', 'needs mode approximate');
    return {
      ...cur,
      name: body.name === undefined ? cur.name : body.name,
      conditions: body.conditions ? await tools.conditions(body.conditions) : cur.conditions,
      group_by: body.group_by ?? cur.group_by,
      type: body.type ?? cur.type,
      unit: body.unit ?? cur.unit,
      value: body.value ?? cur.value,
      mode,
      // Back to exact mode, a lease size would mean nothing: it is dropped.
      lease_size: mode === 'exact' ? null : body.lease_size === undefined ? (cur.lease_size ?? null) : body.lease_size,
      last_updated_at: tools.now,
      last_updated_by: tools.keyId,
    };
  },
  store: {
    create: (repo, rec) => repo.createRate(rec),
    get: (repo, orgId, id) => repo.getRate(orgId, id),
    put: (repo, rec) => repo.putRate(rec),
    listOrganisation: (repo, orgId) => repo.listRateByOrganisation(orgId),
    listWorkspace: async (repo, ws) => (await repo.listWorkspace(ws)).rate,
  },
};

// ---- usage limits ------------------------------------------------------------------------------

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

export function usageOf(policy: UsageLimitPolicyRecord, c: UsageCounterRecord): EntityUsage {
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

/** The anchor and the next reset for a reset rule set at `nowMs` (or at `requested`). */
function schedule(rule: ResetRule, requested: string | null | undefined, nowMs: number): { reset_anchor: string | null; next_usage_reset_at: string | null } {
  if (!resets(rule)) return { reset_anchor: null, next_usage_reset_at: null };
  const anchor = requested ? Date.parse(requested) : (defaultAnchor(rule, nowMs) ?? nowMs);
  const period = budgetPeriod(rule, anchor, nowMs);
  return { reset_anchor: new Date(anchor).toISOString(), next_usage_reset_at: period.end === null ? null : new Date(period.end).toISOString() };
}

/** The stored policy with the update's fields; setting one reset rule replaces the other. */
function changedUsage(cur: UsageLimitPolicyRecord, body: UpdateUsageLimitBody, tools: UpdateTools): UsageLimitPolicyRecord {
  const next: UsageLimitPolicyRecord = {
    ...cur,
    name: body.name === undefined ? cur.name : body.name,
    credit_limit: body.credit_limit ?? cur.credit_limit,
    alert_threshold: body.alert_threshold === undefined ? cur.alert_threshold : body.alert_threshold,
    alert_emails: body.alert_emails ?? cur.alert_emails,
    last_updated_at: tools.now,
    last_updated_by: tools.keyId,
  };
  if (body.periodic_reset !== undefined) {
    next.periodic_reset = body.periodic_reset;
    if (body.periodic_reset !== null && body.periodic_reset_days === undefined) next.periodic_reset_days = null;
  }
  if (body.periodic_reset_days !== undefined) {
    next.periodic_reset_days = body.periodic_reset_days;
    if (body.periodic_reset_days !== null && body.periodic_reset === undefined) next.periodic_reset = null;
  }
  return next;
}

/** Rules between the update and the stored policy. */
function checkUsage(next: UsageLimitPolicyRecord, body: UpdateUsageLimitBody): void {
  const problems: FieldProblem[] = [];
  if (next.alert_threshold !== null && next.alert_threshold >= next.credit_limit) {
    problems.push({
      path: body.alert_threshold != null ? 'alert_threshold' : 'credit_limit',
      message: body.alert_threshold != null ? 'must be less than credit_limit' : 'must be greater than alert_threshold',
    });
  }
  if (next.type === 'tokens' && !Number.isInteger(next.credit_limit)) problems.push({ path: 'credit_limit', message: 'must be an integer for a tokens limit' });
  if (body.next_usage_reset_at != null && !resets(next)) problems.push({ path: 'next_usage_reset_at', message: 'needs periodic_reset or periodic_reset_days' });
  if (problems.length) throw new ValidationError(problems);
}

export const USAGE_LIMITS: PolicyKind<UsageLimitPolicyRecord, CreateUsageLimitBody, UpdateUsageLimitBody> = {
  object: USAGE_OBJECT,
  label: 'Usage limits policy',
  segment: 'usage-limits',
  idParam: 'policyUsageLimitsId',
  resource: 'usage_limits_policies',
  // Usage limits policies are policies too: they need both flags.
  features: ['policy', 'usageLimits'],
  organisationWide: false,
  createSchema: createUsageLimitSchema,
  updateSchema: updateUsageLimitSchema,
  listFilters: z.object({ type: optionalEnum(['cost', 'tokens']) }),
  matches: (p, f) => !f.type || p.type === f.type,
  view: usageView,
  build(common, body, nowMs) {
    const rule: ResetRule = { periodic_reset: body.periodic_reset ?? null, periodic_reset_days: body.periodic_reset_days ?? null };
    return {
      ...common,
      // Never null here: usage limits policies are not organisation-wide (`organisationWide`).
      workspace_id: common.workspace_id ?? throwRequired('workspace_id'),
      type: body.type,
      credit_limit: body.credit_limit,
      alert_threshold: body.alert_threshold ?? null,
      ...rule,
      ...schedule(rule, body.next_usage_reset_at, nowMs),
      last_reset_at: null,
      alert_emails: body.alert_emails ?? [],
    };
  },
  async change(cur, body, tools) {
    const next = changedUsage(cur, body, tools);
    checkUsage(next, body);
    const ruleChanged = body.periodic_reset !== undefined || body.periodic_reset_days !== undefined || body.next_usage_reset_at !== undefined;
    return ruleChanged ? { ...next, ...schedule(next, body.next_usage_reset_at, tools.nowMs) } : next;
  },
  async afterChange(repo, cur, next, body, tools) {
    // Alerts: a raised limit clears both, a raised or removed threshold clears the threshold alert.
    const period = currentPeriod(next, tools.nowMs).key;
    const flags: AlertFlag[] = [];
    if (next.credit_limit > cur.credit_limit) flags.push('threshold_alert_sent', 'exhausted_alert_sent');
    else if (cur.alert_threshold !== null && (next.alert_threshold === null || next.alert_threshold > cur.alert_threshold)) flags.push('threshold_alert_sent');
    await repo.clearAlerts(next.id, period, flags);
    if (body.reset_usage_for_value !== undefined) await repo.resetCounter(next.id, period, entityIdOf(body.reset_usage_for_value), tools.now);
  },
  store: {
    create: (repo, rec) => repo.createUsage(rec),
    get: (repo, orgId, id) => repo.getUsage(orgId, id),
    put: (repo, rec) => repo.putUsage(rec),
    listOrganisation: (repo, orgId) => repo.listUsageByOrganisation(orgId),
    listWorkspace: async (repo, ws) => (await repo.listWorkspace(ws)).usage,
  },
};
