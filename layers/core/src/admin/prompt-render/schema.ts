/**
 * The body of `POST /v1/prompts/{id}/render` (reference: createPromptRender): `variables`, and
 * the hyperparameters under `hyperparameters`. Closed like every admin body, so a misspelt field is
 * named rather than dropped (the gateway's completions take hyperparameters at the root too, where
 * the chat request's own validation judges them).
 */
import * as z from 'zod';

export const renderPromptSchema = z.object({
  variables: z.record(z.string(), z.unknown(), { error: 'is required and must be an object' }),
  hyperparameters: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
  lenient: z.boolean({ error: 'must be a boolean' }).optional(),
});

export type RenderPromptBody = z.output<typeof renderPromptSchema>;
