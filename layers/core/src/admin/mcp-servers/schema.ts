/** Request bodies of `/v1/mcp-servers`. Unknown fields are refused by `withBody` (admin/body.ts). */
import * as z from 'zod';
import { nameSchema, slugSchema } from '../integrations/common.ts';

const description = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish();

export const createMcpServerSchema = z.object({
  name: nameSchema,
  mcp_integration_id: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty'),
  workspace_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
  slug: slugSchema.optional(),
  description,
  default_user_access: z.enum(['allow', 'deny'], { error: 'must be one of allow, deny' }).optional(),
});

export const updateMcpServerSchema = z
  .object({ name: nameSchema.optional(), description })
  .refine((b) => b.name !== undefined || b.description !== undefined, { message: 'must change at least one of name, description' });

export const userAccessUpdateSchema = z
  .object({
    user_access: z
      .array(z.object({ user_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty'), enabled: z.boolean({ error: 'must be a boolean' }) }), {
        error: 'must be a list of {user_id, enabled}',
      })
      .max(1000, 'must hold at most 1000 users')
      .optional(),
    default_user_access: z.enum(['allow', 'deny'], { error: 'must be one of allow, deny' }).optional(),
  })
  .refine((b) => b.user_access !== undefined || b.default_user_access !== undefined, { message: 'must set user_access or default_user_access' });

export type CreateMcpServerBody = z.output<typeof createMcpServerSchema>;
export type UpdateMcpServerBody = z.output<typeof updateMcpServerSchema>;
export type UserAccessUpdateBody = z.output<typeof userAccessUpdateSchema>;

/** `/test`: how long to wait for the server (default 10 s). */
export const testServerSchema = z.object({
  timeout_ms: z.number({ error: 'must be a number' }).int('must be an integer').min(100, 'must be >= 100').max(30_000, 'must be <= 30000').optional(),
});
