/** Request bodies of the workspace member routes. */
import * as z from 'zod';

/** Workspace roles; the reference spec's workspace `admin` is our manager. */
export const workspaceRoleSchema = z
  .enum(['manager', 'member', 'admin'], { error: 'must be manager or member' })
  .transform((r) => (r === 'admin' ? 'manager' : r));

export const addMembersSchema = z.object({
  users: z
    .array(
      z.object(
        { id: z.string({ error: 'is required and must be a user id' }).min(1, 'must not be empty'), role: workspaceRoleSchema.default('member') },
        { error: 'must be an object' },
      ),
      { error: 'is required and must be an array' },
    )
    .min(1, 'must list at least one user')
    .max(50, 'must list at most 50 users'),
});

export const updateMemberSchema = z.object({ role: workspaceRoleSchema }).strict();

export type AddMembersBody = z.output<typeof addMembersSchema>;
export type UpdateMemberBody = z.output<typeof updateMemberSchema>;
