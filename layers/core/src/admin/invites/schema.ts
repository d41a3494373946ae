/** Request bodies of the invite routes. */
import * as z from 'zod';
import { isScope } from '../../policy/scopes.ts';
import { workspaceRoleSchema } from '../members/schema.ts';

export const createInviteSchema = z.object({
  email: z.email({ error: 'is required and must be an e-mail address' }).max(254, 'must be at most 254 characters'),
  role: z.enum(['admin', 'member'], { error: 'is required and must be admin or member' }),
  workspaces: z
    .array(
      z.object(
        { id: z.string({ error: 'is required and must be a workspace id or slug' }).min(1, 'must not be empty'), role: workspaceRoleSchema },
        { error: 'must be an object' },
      ),
      { error: 'is required and must be an array' },
    )
    .max(30, 'must list at most 30 workspaces'),
  /** A workspace user key made for the new user in each invited workspace, shown once on acceptance. */
  workspace_api_key_details: z
    .object(
      {
        name: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
        scopes: z
          .array(z.string({ error: 'must be a string' }).refine(isScope, { message: 'is not a known scope' }), {
            error: 'is required and must be an array of scopes',
          })
          .min(1, 'must name at least one scope'),
      },
      { error: 'must be an object' },
    )
    .nullish(),
});

export const acceptInviteSchema = z.object({
  token: z.string({ error: 'is required and must be the token of the invite link' }).min(1, 'must not be empty'),
  first_name: z.string({ error: 'must be a string' }).trim().max(128, 'must be at most 128 characters').nullish(),
  last_name: z.string({ error: 'must be a string' }).trim().max(128, 'must be at most 128 characters').nullish(),
});

export type CreateInviteBody = z.output<typeof createInviteSchema>;
export type AcceptInviteBody = z.output<typeof acceptInviteSchema>;
