/** Request bodies of `/v1/prompts/partials`; unknown fields are refused by `withBody` (admin/body.ts). */
import * as z from 'zod';
import { nameSchema } from '../prompts/common.ts';
import { templateSchema, versionDescriptionSchema } from '../prompts/schema.ts';

export const createPartialSchema = z.object({
  name: nameSchema,
  string: templateSchema,
  workspace_id: z.string().min(1).optional(),
  version_description: versionDescriptionSchema.optional(),
});

export const updatePartialSchema = z
  .object({
    name: nameSchema.optional(),
    string: templateSchema.optional(),
    /** The new version's description (with `string`). */
    description: versionDescriptionSchema.optional(),
    status: z.enum(['active', 'archived']).optional(),
  })
  .refine((b) => b.description === undefined || b.string !== undefined, { path: ['description'], message: 'describes a new version: send it with string' })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one of name, string, status' });

export type CreatePartialBody = z.output<typeof createPartialSchema>;
export type UpdatePartialBody = z.output<typeof updatePartialSchema>;
