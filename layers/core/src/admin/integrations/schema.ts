/** Request bodies of the integration routes. Provider configurations are checked per provider (configurations.ts). */
import * as z from 'zod';
import { ValidationError } from '../../http/errors.ts';
import { typeMessage } from '../../gateway/validate/common.ts';
import { keySchema, nameSchema, slugSchema } from './common.ts';
import { secretMappingsSchema } from '../secret-references/mapping-schema.ts';

const TAG_KEY = /^[A-Za-z0-9_.:/-]+$/;

export const tagsSchema = z
  .record(
    z.string().min(1, 'must not be empty').max(64, 'must be at most 64 characters').regex(TAG_KEY, 'may only contain letters, digits and _ . : / -'),
    z.string({ error: 'must be a string' }).max(256, 'must be at most 256 characters'),
    { error: typeMessage('must be an object of string values') },
  )
  .refine((t) => Object.keys(t).length <= 50, { message: 'must have at most 50 tags' });

const workspaceIds = z
  .array(z.string({ error: 'must be a string' }).min(1, 'must not be empty'), {
    error: 'must be an array of workspace ids or slugs, or null for every workspace',
  })
  .max(500, 'must have at most 500 items')
  .nullable();

const allowedModels = z
  .array(z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'), {
    error: 'must be an array of model names',
  })
  .max(1000, 'must have at most 1000 items');

const configurations = z.record(z.string(), z.unknown(), { error: 'must be an object' });

const description = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish();

export const createIntegrationSchema = z.strictObject({
  name: nameSchema,
  slug: slugSchema.optional(),
  ai_provider_id: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty'),
  key: keySchema.optional(),
  description,
  configurations: configurations.optional(),
  tags: tagsSchema.optional(),
  /** Absent or null: every workspace. */
  workspace_ids: workspaceIds.optional(),
  allowed_models: allowedModels.optional(),
  create_default_provider: z.boolean({ error: 'must be a boolean' }).optional(),
  default_provider_slug: slugSchema.optional(),
  /** Fields resolved at request time from secret references; `key` mapped makes `key` optional. */
  secret_mappings: secretMappingsSchema.optional(),
});

export const updateIntegrationSchema = z
  .strictObject({
    name: nameSchema.optional(),
    /** A new credential; null removes it. */
    key: keySchema.nullable().optional(),
    description,
    configurations: configurations.optional(),
    tags: tagsSchema.optional(),
    workspace_ids: workspaceIds.optional(),
    allowed_models: allowedModels.optional(),
    status: z.enum(['active', 'archived'], { error: 'must be one of active, archived' }).optional(),
    /** Replaces the mappings; [] removes them. */
    secret_mappings: secretMappingsSchema.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type CreateIntegrationBody = z.output<typeof createIntegrationSchema>;
export type UpdateIntegrationBody = z.output<typeof updateIntegrationSchema>;

/** `tags=env=prod,team=ml` or repeated `tags=` parameters: every pair must match. */
export function parseTagFilter(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of values.flatMap((v) => v.split(','))) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw ValidationError.field('tags', `"${pair}" is not key=value`);
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}
