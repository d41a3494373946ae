/** Request bodies of the provider routes. */
import * as z from 'zod';
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
});

export const updateProviderSchema = z
  .strictObject({
    name: nameSchema.optional(),
    note: noteSchema,
    /** null: never expires. */
    expires_at: expiresAtSchema,
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one of name, note, expires_at' });

export type CreateProviderBody = z.output<typeof createProviderSchema>;
export type UpdateProviderBody = z.output<typeof updateProviderSchema>;
