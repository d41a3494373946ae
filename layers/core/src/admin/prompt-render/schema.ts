/**
 * The body of `POST /v1/prompts/{id}/render` (reference: createPromptRender): `variables`, and the
 * hyperparameters at the root as the reference's clients send them (`temperature`, `max_tokens`,
 * ...) or under `hyperparameters`, where they win. The object is open for that reason: what the
 * rendered request does with a field is judged where the request is used (the gateway validates
 * the chat request of a completion).
 */
import * as z from 'zod';

export const renderPromptSchema = z.looseObject({
  variables: z.record(z.string(), z.unknown(), { error: 'is required and must be an object' }),
  hyperparameters: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
  lenient: z.boolean({ error: 'must be a boolean' }).optional(),
});

export type RenderPromptBody = z.output<typeof renderPromptSchema>;
