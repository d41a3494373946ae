/**
 * The image endpoints: generations (JSON), edits and variations (multipart/form-data), with
 * OpenAI's request rules. Unknown fields pass through.
 */
import * as z from 'zod/mini';
import type { FormSummary } from '../endpoint.ts';
import { integerBetween, nonEmptyString, parseRequestBody } from './common.ts';
import { checkForm } from './form.ts';

const RESPONSE_FORMATS = ['url', 'b64_json'] as const;

export const imageGenerationSchema = z.looseObject({
  prompt: nonEmptyString(),
  model: z.nullish(z.string()),
  n: z.nullish(integerBetween(1, 10)),
  response_format: z.nullish(z.enum(RESPONSE_FORMATS)),
  size: z.nullish(z.string()),
  quality: z.nullish(z.string()),
  style: z.nullish(z.string()),
  stream: z.nullish(z.boolean()),
  partial_images: z.nullish(integerBetween(0, 3)),
  user: z.optional(z.string()),
});

export function parseImageGeneration(body: unknown): z.output<typeof imageGenerationSchema> {
  return parseRequestBody(imageGenerationSchema, body);
}

const common = {
  n: { number: { min: 1, max: 10, integer: true } },
  response_format: { oneOf: RESPONSE_FORMATS },
} as const;

export function checkImageEditForm(form: FormSummary): void {
  checkForm(form, {
    // gpt-image models take several images, sent as `image[]`.
    files: { image: { required: true, alsoAs: ['image[]'] }, mask: {} },
    fields: {
      prompt: { required: true },
      ...common,
      stream: { boolean: true },
      partial_images: { number: { min: 0, max: 3, integer: true } },
    },
  });
}

export function checkImageVariationForm(form: FormSummary): void {
  checkForm(form, { files: { image: { required: true } }, fields: common });
}
