/** Request bodies of the API key routes. */
import * as z from 'zod';
import { isScope } from '../../policy/scopes.ts';

const scope = z.string({ error: 'must be a string' }).refine(isScope, { message: 'is not a known scope' });

export const createApiKeySchema = z.object({
  name: z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  description: z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish(),
  scopes: z.array(scope, { error: 'is required and must be an array of scopes' }).min(1, 'must name at least one scope'),
  workspace_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
  user_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(128, 'must be at most 128 characters').optional(),
  expires_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).nullish(),
});

export type CreateApiKeyBody = z.output<typeof createApiKeySchema>;
