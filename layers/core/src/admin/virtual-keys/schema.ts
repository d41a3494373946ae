/**
 * Request bodies of the virtual key routes: the reference spec's fields (including its camelCase
 * Azure ones), plus `configurations` as integrations take them.
 */
import * as z from 'zod';
import { expiresAtSchema, keySchema, nameSchema, noteSchema, slugSchema } from '../integrations/common.ts';

const legacyText = z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters').nullish();

const deploymentConfig = z
  .array(
    z.strictObject({
      apiVersion: z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(30, 'must be at most 30 characters'),
      deploymentName: z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
      alias: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
      is_default: z.boolean({ error: 'must be a boolean' }).optional(),
    }),
    { error: 'must be an array of deployments' },
  )
  .min(1, 'must have at least 1 item')
  .max(100, 'must have at most 100 items');

const configurations = z.record(z.string(), z.unknown(), { error: 'must be an object' });

export const createVirtualKeySchema = z.strictObject({
  name: nameSchema,
  provider: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty'),
  slug: slugSchema.optional(),
  key: keySchema.optional(),
  note: noteSchema,
  workspace_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
  expires_at: expiresAtSchema,
  configurations: configurations.optional(),
  apiVersion: legacyText,
  resourceName: legacyText,
  deploymentName: legacyText,
  deploymentConfig: deploymentConfig.optional(),
});

export const updateVirtualKeySchema = z
  .strictObject({
    name: nameSchema.optional(),
    key: keySchema.optional(),
    note: noteSchema,
    expires_at: expiresAtSchema,
    configurations: configurations.optional(),
    deploymentConfig: deploymentConfig.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type CreateVirtualKeyBody = z.output<typeof createVirtualKeySchema>;
export type UpdateVirtualKeyBody = z.output<typeof updateVirtualKeySchema>;
