/** Request bodies of the saved config routes. The config itself is checked by the routing validator. */
import * as z from 'zod';
import { slugSchema } from '../integrations/common.ts';

const name = z.string().trim().min(1).max(255);
const configObject = z.record(z.string(), z.unknown());

export const createConfigSchema = z.object({
  name,
  /** Chosen by the caller, unique in the organisation; generated from the name when absent. */
  slug: slugSchema.optional(),
  config: configObject,
  workspace_id: z.string().min(1).optional(),
  is_default: z.boolean().default(false),
  // The reference API spells it isDefault.
  isDefault: z.boolean().optional(),
});

export const updateConfigSchema = z
  .object({
    name: name.optional(),
    config: configObject.optional(),
    status: z.enum(['active', 'archived']).optional(),
    is_default: z.boolean().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one of name, config, status, is_default' });

export type CreateConfigBody = z.output<typeof createConfigSchema>;
export type UpdateConfigBody = z.output<typeof updateConfigSchema>;
