/** Request bodies of the provider routes. */
import * as z from 'zod';
import { usageLimitsSchema } from '../api-keys/schema.ts';
import { expiresAtSchema, nameSchema, noteSchema, slugSchema } from '../integrations/common.ts';

export const createProviderSchema = z.strictObject({
  name: nameSchema,
  /** The integration's id or slug. */
  integration_id: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty'),
  slug: slugSchema.optional(),
  /** Id or slug; a workspace key's own by default. */
  workspace_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
  note: noteSchema,
  expires_at: expiresAtSchema,
  /** The provider's budget (the API key's shape); null or absent: none. */
  usage_limits: usageLimitsSchema.nullish(),
});

export const updateProviderSchema = z
  .strictObject({
    name: nameSchema.optional(),
    note: noteSchema,
    /** null: never expires. */
    expires_at: expiresAtSchema,
    /** null: no budget any more. */
    usage_limits: usageLimitsSchema.nullish(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one of name, note, expires_at, usage_limits' });

export type CreateProviderBody = z.output<typeof createProviderSchema>;
export type UpdateProviderBody = z.output<typeof updateProviderSchema>;
