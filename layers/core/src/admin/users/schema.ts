/** Request bodies of the organisation user routes. */
import * as z from 'zod';

export const organisationRoleSchema = z.enum(['owner', 'admin', 'member'], { error: 'must be owner, admin or member' });

const personName = z.string({ error: 'must be a string' }).trim().max(128, 'must be at most 128 characters').nullish();

export const updateUserSchema = z
  .object({ role: organisationRoleSchema.optional(), first_name: personName, last_name: personName })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type UpdateUserBody = z.output<typeof updateUserSchema>;
