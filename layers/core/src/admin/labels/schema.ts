/**
 * Request bodies of `/v1/labels`. A label's name is what `slug@<label>` names, so it cannot read as
 * a version (`3`), `latest` or `default`, and holds no `@` or space.
 */
import * as z from 'zod';

const labelName = z
  .string({ error: 'must be a string' })
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, "_" or "-"')
  .refine((n) => !/^\d+$/.test(n), 'must not be a number (slug@3 names a version)')
  .refine((n) => n !== 'latest' && n !== 'default', 'must not be "latest" or "default"');

const description = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters');
const colorCode = z.string({ error: 'must be a string' }).regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a colour like #1e90ff');

export const createLabelSchema = z.object({
  name: labelName,
  organisation_id: z.string().min(1).optional(),
  workspace_id: z.string().min(1).optional(),
  description: description.nullish(),
  color_code: colorCode.nullish(),
});

export const updateLabelSchema = z
  .object({ name: labelName.optional(), description: description.nullish(), color_code: colorCode.nullish() })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one of name, description, color_code' });

export type CreateLabelBody = z.output<typeof createLabelSchema>;
export type UpdateLabelBody = z.output<typeof updateLabelSchema>;
