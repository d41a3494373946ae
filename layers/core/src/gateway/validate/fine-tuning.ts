/** POST /v1/fine_tuning/jobs: OpenAI's request rules. Unknown fields pass through. */
import * as z from 'zod/mini';
import { integer, metadata, nonEmptyString, parseRequestBody } from './common.ts';

export const fineTuningRequestSchema = z.looseObject({
  model: nonEmptyString(),
  training_file: nonEmptyString(),
  validation_file: z.nullish(z.string()),
  suffix: z.nullish(z.string().check(z.maxLength(64, { error: 'must be at most 64 characters' }))),
  seed: z.nullish(integer()),
  hyperparameters: z.optional(z.looseObject({})),
  method: z.optional(z.looseObject({ type: z.optional(z.string()) })),
  integrations: z.nullish(z.array(z.looseObject({ type: z.string() }))),
  metadata: z.nullish(metadata),
});

export type FineTuningRequest = z.output<typeof fineTuningRequestSchema>;

export function parseFineTuningRequest(body: unknown): FineTuningRequest {
  return parseRequestBody(fineTuningRequestSchema, body);
}
