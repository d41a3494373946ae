/** Request bodies of the rate limits and usage limits policy routes. */
import * as z from 'zod';
import { MAX_RECIPIENTS } from '../../ports/mailer.ts';
import { ENDPOINT_TYPES } from '../../providers/types.ts';
import { CONDITION_KEYS, GROUP_BY_KEYS, isConditionKey, isEndpointType, isGroupByKey } from '../../policy/limits/match.ts';
import { RATE_UNITS } from '../../policy/limits/windows.ts';

/** Integers up to 2^53: counters are DynamoDB numbers read back as JS numbers. */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;
/** Dollars; the counters hold micro-dollars, which must stay exact integers. */
const MAX_DOLLARS = 1_000_000_000;

const name = z.string({ error: 'must be a string' }).max(255, 'must be at most 255 characters').nullish();

const condition = z
  .object(
    {
      key: z.string({ error: 'must be a string' }).refine(isConditionKey, { message: `must be one of ${CONDITION_KEYS.join(', ')} or metadata.<key>` }),
      value: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
    },
    { error: 'must be an object with key and value' },
  )
  .strict()
  .superRefine((c, ctx) => {
    if (c.key === 'endpoint_type' && c.value !== '*' && !isEndpointType(c.value)) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: `must be an endpoint type (${ENDPOINT_TYPES.join(', ')}) or *` });
    }
  });

const groupBy = z
  .object(
    {
      key: z.string({ error: 'must be a string' }).refine(isGroupByKey, { message: `must be one of ${GROUP_BY_KEYS.join(', ')} or metadata.<key>` }),
    },
    { error: 'must be an object with a key' },
  )
  .strict();

const conditions = z.array(condition, { error: 'must be an array of conditions' }).min(1, 'must have at least 1 item').max(20, 'must have at most 20 items');
const groupByList = z
  .array(groupBy, { error: 'must be an array of group-by keys' })
  .min(1, 'must have at least 1 item')
  .max(5, 'must have at most 5 items')
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((g, i) => {
      if (seen.has(g.key)) ctx.addIssue({ code: 'custom', path: [i, 'key'], message: `repeats ${g.key}` });
      seen.add(g.key);
    });
  });

const workspaceId = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(255, 'must be at most 255 characters');
const organisationId = z.uuid({ error: 'must be a UUID' });

// ---- rate limits -------------------------------------------------------------------------------

const rateType = z.enum(['requests', 'tokens'], { error: 'must be one of requests, tokens' });
const rateUnit = z.enum(RATE_UNITS, { error: `must be one of ${RATE_UNITS.join(', ')}` });
const rateValue = z.number({ error: 'must be a number' }).int('must be an integer').min(1, 'must be at least 1').max(MAX_COUNT, `must be at most ${MAX_COUNT}`);

/** `approximate` counts through per-instance leases (docs/limits.md: the error bound). */
const rateMode = z.enum(['exact', 'approximate'], { error: 'must be one of exact, approximate' });
/** The units a lease takes: at most a million, so a lease stays a small share of any window. */
export const MAX_LEASE_SIZE = 1_000_000;
const leaseSize = z
  .number({ error: 'must be a number' })
  .int('must be an integer')
  .min(1, 'must be at least 1')
  .max(MAX_LEASE_SIZE, `must be at most ${MAX_LEASE_SIZE}`)
  .nullish();

export const createRateLimitSchema = z
  .object({
    name,
    conditions,
    group_by: groupByList,
    type: rateType,
    unit: rateUnit,
    value: rateValue,
    mode: rateMode.optional(),
    lease_size: leaseSize,
    workspace_id: workspaceId.optional(),
    organisation_id: organisationId.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.lease_size != null && b.mode !== 'approximate') ctx.addIssue({ code: 'custom', path: ['lease_size'], message: 'needs mode approximate' });
  });

/** Any of the create fields (at least one); the workspace and organisation cannot move. */
export const updateRateLimitSchema = z
  .object({
    name,
    conditions: conditions.optional(),
    group_by: groupByList.optional(),
    type: rateType.optional(),
    unit: rateUnit.optional(),
    value: rateValue.optional(),
    mode: rateMode.optional(),
    lease_size: leaseSize,
    workspace_id: workspaceId.optional(),
    organisation_id: organisationId.optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type CreateRateLimitBody = z.output<typeof createRateLimitSchema>;
export type UpdateRateLimitBody = z.output<typeof updateRateLimitSchema>;

// ---- usage limits ------------------------------------------------------------------------------

const usageType = z.enum(['cost', 'tokens'], { error: 'must be one of cost, tokens' });
const amount = z.number({ error: 'must be a number' }).min(0, 'must be at least 0').max(MAX_DOLLARS, `must be at most ${MAX_DOLLARS}`);
const periodicReset = z.enum(['weekly', 'monthly'], { error: 'must be one of weekly, monthly' }).nullish();
const periodicResetDays = z
  .number({ error: 'must be an integer' })
  .int('must be an integer')
  .min(1, 'must be between 1 and 365')
  .max(365, 'must be between 1 and 365')
  .nullish();
const nextReset = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).nullish();
const alertEmails = z
  .array(z.email({ error: 'must be an e-mail address' }), { error: 'must be an array of e-mail addresses' })
  .max(MAX_RECIPIENTS, `must have at most ${MAX_RECIPIENTS} items`);

interface UsageFields {
  type?: 'cost' | 'tokens' | undefined;
  credit_limit?: number | undefined;
  alert_threshold?: number | null | undefined;
  periodic_reset?: 'weekly' | 'monthly' | null | undefined;
  periodic_reset_days?: number | null | undefined;
  next_usage_reset_at?: string | null | undefined;
}

/** Rules between fields of one body; the service checks the same against the stored policy. */
function usageCrossChecks(b: UsageFields, ctx: z.RefinementCtx): void {
  if (b.periodic_reset != null && b.periodic_reset_days != null) {
    ctx.addIssue({ code: 'custom', path: ['periodic_reset_days'], message: 'cannot be set together with periodic_reset' });
  }
  if (b.type === 'tokens' && b.credit_limit !== undefined && !Number.isInteger(b.credit_limit)) {
    ctx.addIssue({ code: 'custom', path: ['credit_limit'], message: 'must be an integer for a tokens limit' });
  }
  if (b.alert_threshold != null && b.credit_limit !== undefined && b.alert_threshold >= b.credit_limit) {
    ctx.addIssue({ code: 'custom', path: ['alert_threshold'], message: 'must be less than credit_limit' });
  }
}

export const createUsageLimitSchema = z
  .object({
    name,
    conditions,
    group_by: groupByList,
    type: usageType,
    credit_limit: amount,
    alert_threshold: amount.nullish(),
    periodic_reset: periodicReset,
    periodic_reset_days: periodicResetDays,
    next_usage_reset_at: nextReset,
    alert_emails: alertEmails.optional(),
    workspace_id: workspaceId.optional(),
    organisation_id: organisationId.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    usageCrossChecks(b, ctx);
    if (b.next_usage_reset_at != null && b.periodic_reset == null && b.periodic_reset_days == null) {
      ctx.addIssue({ code: 'custom', path: ['next_usage_reset_at'], message: 'needs periodic_reset or periodic_reset_days' });
    }
  });

export const updateUsageLimitSchema = z
  .object({
    name,
    credit_limit: amount.optional(),
    alert_threshold: amount.nullish(),
    periodic_reset: periodicReset,
    periodic_reset_days: periodicResetDays,
    next_usage_reset_at: nextReset,
    alert_emails: alertEmails.optional(),
    /** Resets one group's usage (its value key, e.g. `api_key:<id>`) in the current period. */
    reset_usage_for_value: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(2048, 'must be at most 2048 characters').optional(),
  })
  .strict()
  .superRefine(usageCrossChecks)
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type CreateUsageLimitBody = z.output<typeof createUsageLimitSchema>;
export type UpdateUsageLimitBody = z.output<typeof updateUsageLimitSchema>;

/** The `{rateLimitsPolicyId}` and `{policyUsageLimitsId}` path parameters. */
export const policyIdSchema = z.uuid({ error: 'must be a UUID' });

export const listQuerySchema = z.object({
  workspace_id: workspaceId.optional(),
  status: z.enum(['active', 'archived'], { error: 'must be one of active, archived' }).default('active'),
});
