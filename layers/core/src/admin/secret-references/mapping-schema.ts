/** The `secret_mappings` body of integrations (apart from schema.ts, which imports integration schemas). */
import * as z from 'zod';

const secretKey = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(255, 'must be at most 255 characters').nullish();

/** One `secret_mappings` item of an integration. */
export const secretMappingSchema = z.strictObject({
  target_field: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  secret_reference_id: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  secret_key: secretKey,
});

export const secretMappingsSchema = z
  .array(secretMappingSchema, { error: 'must be an array of {target_field, secret_reference_id}' })
  .max(20, 'must have at most 20 items');

export type SecretMappingBody = z.output<typeof secretMappingSchema>;
