/**
 * The image endpoints: generations (JSON), edits and variations (multipart/form-data), with
 * OpenAI's request rules. Unknown fields pass through.
 */
import * as z from 'zod';
import type { FormSummary } from '../request-body.ts';
import { integerBetween, nonEmptyString, parseRequestBody } from './common.ts';
import { checkForm } from './form.ts';

const RESPONSE_FORMATS = ['url', 'b64_json'] as const;

export const imageGenerationSchema = z.looseObject({
  prompt: nonEmptyString(),
  model: z.string().nullish(),
  n: integerBetween(1, 10).nullish(),
  response_format: z.enum(RESPONSE_FORMATS).nullish(),
  size: z.string().nullish(),
  quality: z.string().nullish(),
  style: z.string().nullish(),
  stream: z.boolean().nullish(),
  partial_images: integerBetween(0, 3).nullish(),
  user: z.string().optional(),
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
