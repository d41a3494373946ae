/**
 * POST /v1/moderations (docs/design/spec.md#request-limits): `input` is required; `model` is one of the two text
 * moderation models of the contract, `text-moderation-latest` when left out, or one of the providers'
 * current moderation models (OpenAI's omni models, in its own docs; Mistral's).
 */
import * as z from 'zod/mini';
import { parseRequestBody, typeMessage } from './common.ts';

export const MODERATION_MODELS = [
  'text-moderation-stable',
  'text-moderation-latest',
  'omni-moderation-latest',
  'omni-moderation-2024-09-26',
  'mistral-moderation-latest',
  'mistral-moderation-2411',
] as const;
export const DEFAULT_MODERATION_MODEL = 'text-moderation-latest';

/** Text, texts, or multimodal parts (`{type: "text" | "image_url", ...}`) as OpenAI takes them. */
const part = z.union([z.string(), z.looseObject({ type: z.string() })], { error: typeMessage('must be a string or an input part') });
const input = z.union([z.string(), z.array(part).check(z.minLength(1, { error: 'must not be empty' }))], {
  error: typeMessage('must be a string, an array of strings or an array of input parts'),
});

export const moderationRequestSchema = z.looseObject({
  input,
  model: z.optional(z.enum(MODERATION_MODELS)),
});

export type ModerationRequest = z.output<typeof moderationRequestSchema>;

export function parseModerationRequest(body: unknown): ModerationRequest {
  return parseRequestBody(moderationRequestSchema, body);
}
