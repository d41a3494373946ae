/** POST /v1/fine_tuning/jobs: OpenAI's request rules. Unknown fields pass through. */
import * as z from 'zod';
import { integer, metadata, nonEmptyString, parseRequestBody } from './common.ts';

export const fineTuningRequestSchema = z.looseObject({
  model: nonEmptyString(),
  training_file: nonEmptyString(),
  validation_file: z.string().nullish(),
  suffix: z.string().max(64, { error: 'must be at most 64 characters' }).nullish(),
  seed: integer().nullish(),
  hyperparameters: z.looseObject({}).optional(),
  method: z.looseObject({ type: z.string().optional() }).optional(),
  integrations: z.array(z.looseObject({ type: z.string() })).nullish(),
  metadata: metadata.nullish(),
});

export type FineTuningRequest = z.output<typeof fineTuningRequestSchema>;

export function parseFineTuningRequest(body: unknown): FineTuningRequest {
  return parseRequestBody(fineTuningRequestSchema, body);
}
