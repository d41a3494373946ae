/** Request bodies of the workspace routes. */
import * as z from 'zod';
import { SECURITY_SETTING_NAMES } from '../../policy/security-settings.ts';
import { rateLimitSchema, usageLimitsSchema } from '../api-keys/schema.ts';

const name = z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters');
const description = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish();

/** Workspace defaults: metadata every request of the workspace carries (more keys are kept as sent). */
const defaults = z
  .object(
    { metadata: z.record(z.string(), z.string({ error: 'must be a string' }), { error: 'must be an object of strings' }).optional() },
    { error: 'must be an object' },
  )
  .catchall(z.unknown());

/** Workspace-level overrides of the organisation's security settings; null removes an override. */
export const settingOverridesSchema = z
  .object(Object.fromEntries(SECURITY_SETTING_NAMES.map((n) => [n, z.boolean({ error: 'must be a boolean or null' }).nullish()])), {
    error: 'must be an object',
  })
  .strict();

const limits = {
  usage_limits: z.array(usageLimitsSchema, { error: 'must be an array' }).max(10, 'must list at most 10 limits').nullish(),
  rate_limits: z.array(rateLimitSchema, { error: 'must be an array' }).max(10, 'must list at most 10 limits').nullish(),
};

export const createWorkspaceSchema = z.object({
  name,
  slug: z
    .string({ error: 'must be a string' })
    .regex(/^[a-z0-9][a-z0-9-]{1,62}$/, 'must be 2-63 lower-case letters, digits or dashes, starting with a letter or digit')
    .optional(),
  description,
  defaults: defaults.nullish(),
  /** Users of the organisation to add as members. */
  users: z
    .array(z.string({ error: 'must be a user id' }), { error: 'must be an array of user ids' })
    .max(100, 'must list at most 100 users')
    .optional(),
  security_settings: settingOverridesSchema.nullish(),
  ...limits,
});

export const updateWorkspaceSchema = z
  .object({
    name: name.optional(),
    description,
    defaults: defaults.nullish(),
    security_settings: settingOverridesSchema.nullish(),
    /** `active` restores an archived workspace (owners and admins only). */
    status: z.enum(['active', 'archived'], { error: 'must be active or archived' }).optional(),
    ...limits,
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type CreateWorkspaceBody = z.output<typeof createWorkspaceSchema>;
export type UpdateWorkspaceBody = z.output<typeof updateWorkspaceSchema>;
