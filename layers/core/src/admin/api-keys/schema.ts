/** Request bodies of the API key routes. */
import * as z from 'zod';
import { isScope } from '../../policy/scopes.ts';

const scope = z.string({ error: 'must be a string' }).refine(isScope, { message: 'is not a known scope' });

const createApiKeyFields = z.object({
  name: z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  description: z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish(),
  scopes: z.array(scope, { error: 'is required and must be an array of scopes' }).min(1, 'must name at least one scope'),
  workspace_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
  user_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(128, 'must be at most 128 characters').optional(),
  expires_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).nullish(),
});

const defaults = z
  .object({
    config_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
    allow_config_override: z.boolean({ error: 'must be a boolean' }).optional(),
    metadata: z.record(z.string(), z.string({ error: 'must be a string' }), { error: 'must be an object of strings' }).optional(),
  }, { error: 'must be an object' })
  .strict();

export const createApiKeySchema = createApiKeyFields.extend({ defaults: defaults.nullish() });

/** Every field optional; at least one must be sent. The key's type and workspace never change. */
export const updateApiKeySchema = z
  .object({
    name: createApiKeyFields.shape.name.optional(),
    description: createApiKeyFields.shape.description,
    scopes: createApiKeyFields.shape.scopes.optional(),
    expires_at: createApiKeyFields.shape.expires_at,
    defaults: defaults.nullish(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type CreateApiKeyBody = z.output<typeof createApiKeySchema>;
export type UpdateApiKeyBody = z.output<typeof updateApiKeySchema>;
