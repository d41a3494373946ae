/** Request bodies of the organisation routes. */
import * as z from 'zod';
import { SECURITY_SETTING_NAMES } from '../../policy/security-settings.ts';

/** docs/design/spec.md#admin-resources: sessions may be limited to no less than 900 seconds. */
export const MIN_SESSION_TTL = 900;

const sessionSettings = z
  .object(
    {
      max_session_ttl: z
        .number({ error: 'must be a number of seconds or null' })
        .int('must be an integer')
        .min(MIN_SESSION_TTL, `must be at least ${MIN_SESSION_TTL} seconds`)
        .nullable(),
    },
    { error: 'must be an object' },
  )
  .strict();

export const updateOrganisationSchema = z
  .object({
    name: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
    /** Security settings to change; null restores a setting's default. */
    security_settings: z
      .object(Object.fromEntries(SECURITY_SETTING_NAMES.map((n) => [n, z.boolean({ error: 'must be a boolean or null' }).nullish()])), {
        error: 'must be an object',
      })
      .strict()
      .optional(),
    session_settings: sessionSettings.optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'must change at least one field' });

export type UpdateOrganisationBody = z.output<typeof updateOrganisationSchema>;
