/**
 * The body of `POST /v1/prompts/{id}/render` (reference: createPromptRender): `variables`, and
 * hyperparameters nested under `hyperparameters` or, as the reference's clients send them, at the
 * root beside `variables`.
 */
import * as z from 'zod';

export const renderPromptSchema = z
  .object({
    variables: z.record(z.string(), z.unknown(), { error: 'is required and must be an object' }),
    hyperparameters: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
    lenient: z.boolean({ error: 'must be a boolean' }).optional(),
  })
  .catchall(z.unknown());

export type RenderPromptBody = z.output<typeof renderPromptSchema>;
