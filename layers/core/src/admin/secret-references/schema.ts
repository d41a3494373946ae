/**
 * Request bodies of `/v1/secret-references`. auth_config is checked per manager_type in
 * auth-config.ts (its fields depend on the manager and its auth mode); unknown fields are refused
 * by `withBody` (admin/body.ts), naming the nearest known one.
 */
import * as z from 'zod';
import { MANAGER_TYPES } from '../../ports/secret-managers.ts';
import { nameSchema, noteSchema, slugSchema } from '../integrations/common.ts';
import { tagsSchema } from '../integrations/schema.ts';

const authConfig = z.record(z.string(), z.unknown(), { error: 'must be an object' });
const secretPath = z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters');
const secretKey = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(255, 'must be at most 255 characters').nullish();
const allowedWorkspaces = z
  .array(z.string({ error: 'must be a string' }).min(1, 'must not be empty'), { error: 'must be an array of workspace ids or slugs' })
  .min(1, 'must name at least one workspace')
  .max(500, 'must have at most 500 items');
const allowAll = z.boolean({ error: 'must be a boolean' });

/** allow_all_workspaces true with a list of workspaces says two things at once. */
const exclusiveWorkspaces = (b: { allow_all_workspaces?: boolean | undefined; allowed_workspaces?: string[] | undefined }, ctx: z.RefinementCtx) => {
  if (b.allow_all_workspaces === true && b.allowed_workspaces !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['allowed_workspaces'], message: 'cannot be combined with allow_all_workspaces true (they are mutually exclusive)' });
  }
};

export const createSecretReferenceSchema = z
  .strictObject({
    name: nameSchema,
    manager_type: z.enum(MANAGER_TYPES, { error: `must be one of ${MANAGER_TYPES.join(', ')}` }),
    auth_config: authConfig,
    secret_path: secretPath,
    secret_key: secretKey,
    slug: slugSchema.optional(),
    description: noteSchema,
    organisation_id: z.string({ error: 'must be a string' }).min(1).optional(),
    allow_all_workspaces: allowAll.optional(),
    allowed_workspaces: allowedWorkspaces.optional(),
    tags: tagsSchema.nullish(),
  })
  .superRefine(exclusiveWorkspaces);

export const updateSecretReferenceSchema = z
  .strictObject({
    name: nameSchema.optional(),
    description: noteSchema,
    auth_config: authConfig.optional(),
    secret_path: secretPath.optional(),
    secret_key: secretKey,
    allow_all_workspaces: allowAll.optional(),
    allowed_workspaces: allowedWorkspaces.optional(),
    tags: tagsSchema.nullish(),
  })
  .superRefine(exclusiveWorkspaces)
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type CreateSecretReferenceBody = z.output<typeof createSecretReferenceSchema>;
export type UpdateSecretReferenceBody = z.output<typeof updateSecretReferenceSchema>;
