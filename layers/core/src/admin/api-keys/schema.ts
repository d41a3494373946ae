/** Request bodies of the API key routes. */
import * as z from 'zod';
import { isScope } from '../../policy/scopes.ts';

const scope = z.string({ error: 'must be a string' }).refine(isScope, { message: 'is not a known scope' });

const isoDateTime = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' });

/** The shortest transition docs/design/spec.md#admin-resources allows: 30 minutes. */
export const MIN_TRANSITION_MS = 1_800_000;

const transition = z
  .number({ error: 'must be a number of milliseconds' })
  .int('must be an integer')
  .min(MIN_TRANSITION_MS, `must be at least ${MIN_TRANSITION_MS} (30 minutes)`);

export const rotationPolicySchema = z
  .object(
    {
      rotation_period: z.enum(['weekly', 'monthly'], { error: 'must be weekly or monthly' }).nullish(),
      next_rotation_at: isoDateTime.nullish(),
      key_transition_period_ms: transition.optional(),
    },
    { error: 'must be an object' },
  )
  .strict()
  .refine((p) => Boolean(p.rotation_period || p.next_rotation_at), { message: 'needs rotation_period or next_rotation_at' });

export const usageLimitsSchema = z
  .object(
    {
      type: z.enum(['cost', 'tokens'], { error: 'must be cost or tokens' }).optional(),
      credit_limit: z.number({ error: 'must be a number' }).positive('must be > 0').nullish(),
      alert_threshold: z.number({ error: 'must be a number' }).positive('must be > 0').nullish(),
      periodic_reset: z.enum(['weekly', 'monthly'], { error: 'must be weekly or monthly' }).nullish(),
      periodic_reset_days: z.number({ error: 'must be a number' }).int('must be an integer').min(1, 'must be >= 1').max(365, 'must be <= 365').nullish(),
      next_usage_reset_at: isoDateTime.nullish(),
    },
    { error: 'must be an object' },
  )
  .strict()
  .superRefine((u, ctx) => {
    if (u.periodic_reset && u.periodic_reset_days) {
      ctx.addIssue({ code: 'custom', path: ['periodic_reset_days'], message: 'cannot be combined with periodic_reset' });
    }
    if (u.alert_threshold != null && u.credit_limit != null && u.alert_threshold > u.credit_limit) {
      ctx.addIssue({ code: 'custom', path: ['alert_threshold'], message: 'must not exceed credit_limit' });
    }
  });

export const rateLimitSchema = z
  .object(
    {
      type: z.enum(['requests', 'tokens'], { error: 'must be requests or tokens' }),
      unit: z.enum(['rps', 'rpm', 'rph', 'rpd', 'rpw'], { error: 'must be one of rps, rpm, rph, rpd, rpw' }),
      value: z.number({ error: 'must be a number' }).int('must be an integer').min(1, 'must be >= 1'),
    },
    { error: 'must be an object' },
  )
  .strict();

const alertEmails = z
  .array(z.email({ error: 'must be an e-mail address' }), { error: 'must be an array of e-mail addresses' })
  .max(50, 'must list at most 50 addresses');

const createApiKeyFields = z.object({
  name: z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  description: z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish(),
  scopes: z.array(scope, { error: 'is required and must be an array of scopes' }).min(1, 'must name at least one scope'),
  workspace_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
  user_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(128, 'must be at most 128 characters').optional(),
  expires_at: isoDateTime.nullish(),
  organisation_id: z.string({ error: 'must be a string' }).optional(),
  rotation_policy: rotationPolicySchema.nullish(),
  alert_emails: alertEmails.nullish(),
  usage_limits: usageLimitsSchema.nullish(),
  rate_limits: z.array(rateLimitSchema, { error: 'must be an array' }).max(10, 'must list at most 10 limits').nullish(),
});

const defaults = z
  .object(
    {
      config_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
      allow_config_override: z.boolean({ error: 'must be a boolean' }).optional(),
      metadata: z.record(z.string(), z.string({ error: 'must be a string' }), { error: 'must be an object of strings' }).optional(),
    },
    { error: 'must be an object' },
  )
  .strict();

export const createApiKeySchema = createApiKeyFields.extend({ defaults: defaults.nullish() });

/** Every field optional; at least one must be sent. The key's type, workspace and user never change. */
export const updateApiKeySchema = z
  .object({
    name: createApiKeyFields.shape.name.optional(),
    description: createApiKeyFields.shape.description,
    scopes: createApiKeyFields.shape.scopes.optional(),
    expires_at: createApiKeyFields.shape.expires_at,
    defaults: defaults.nullish(),
    rotation_policy: createApiKeyFields.shape.rotation_policy,
    alert_emails: createApiKeyFields.shape.alert_emails,
    usage_limits: createApiKeyFields.shape.usage_limits,
    rate_limits: createApiKeyFields.shape.rate_limits,
    /** `true` starts the key's usage afresh now (and makes an exhausted key active again). */
    reset_usage: z.boolean({ error: 'must be a boolean' }).optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export const rotateApiKeySchema = z.object({ key_transition_period_ms: transition.optional() }, { error: 'must be an object' }).strict();

export type CreateApiKeyBody = z.output<typeof createApiKeySchema>;
export type UpdateApiKeyBody = z.output<typeof updateApiKeySchema>;
export type RotateApiKeyBody = z.output<typeof rotateApiKeySchema>;
export type RotationPolicyBody = z.output<typeof rotationPolicySchema>;
export type UsageLimitsBody = z.output<typeof usageLimitsSchema>;
