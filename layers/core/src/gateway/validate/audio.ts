/**
 * The audio endpoints: speech (JSON in, audio bytes out), transcriptions and translations
 * (multipart/form-data in), with OpenAI's request rules. Unknown fields pass through.
 */
import * as z from 'zod/mini';
import type { FormSummary } from '../endpoint.ts';
import { nonEmptyString, numberBetween, parseRequestBody, typeMessage } from './common.ts';
import { checkForm } from './form.ts';

const MAX_SPEECH_INPUT = 4096;

export const speechRequestSchema = z.looseObject({
  model: nonEmptyString(),
  input: nonEmptyString().check(z.maxLength(MAX_SPEECH_INPUT, { error: `must be at most ${MAX_SPEECH_INPUT} characters` })),
  voice: z.union([nonEmptyString(), z.looseObject({ id: nonEmptyString() })], { error: typeMessage('must be a voice name or an object with an id') }),
  instructions: z.optional(z.string()),
  response_format: z.optional(z.enum(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'])),
  speed: z.optional(numberBetween(0.25, 4)),
  stream_format: z.optional(z.enum(['sse', 'audio'])),
});

export function parseSpeechRequest(body: unknown): z.output<typeof speechRequestSchema> {
  return parseRequestBody(speechRequestSchema, body);
}

const TEXT_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;

export function checkTranscriptionForm(form: FormSummary): void {
  checkForm(form, {
    files: { file: { required: true } },
    fields: {
      model: { required: true },
      response_format: { oneOf: [...TEXT_FORMATS, 'diarized_json'] },
      temperature: { number: { min: 0, max: 1 } },
      stream: { boolean: true },
    },
  });
}

export function checkTranslationForm(form: FormSummary): void {
  checkForm(form, {
    files: { file: { required: true } },
    fields: {
      model: { required: true },
      response_format: { oneOf: TEXT_FORMATS },
      temperature: { number: { min: 0, max: 1 } },
    },
  });
}
