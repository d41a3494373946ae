/**
 * The audio endpoints: speech (JSON in, audio bytes out), transcriptions and translations
 * (multipart/form-data in), with OpenAI's request rules. Unknown fields pass through.
 */
import * as z from 'zod';
import type { FormSummary } from '../request-body.ts';
import { nonEmptyString, numberBetween, parseRequestBody, typeMessage } from './common.ts';
import { checkForm } from './form.ts';

const MAX_SPEECH_INPUT = 4096;

export const speechRequestSchema = z.looseObject({
  model: nonEmptyString(),
  input: nonEmptyString().max(MAX_SPEECH_INPUT, { error: `must be at most ${MAX_SPEECH_INPUT} characters` }),
  voice: z.union([nonEmptyString(), z.looseObject({ id: nonEmptyString() })], { error: typeMessage('must be a voice name or an object with an id') }),
  instructions: z.string().optional(),
  response_format: z.enum(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']).optional(),
  speed: numberBetween(0.25, 4).optional(),
  stream_format: z.enum(['sse', 'audio']).optional(),
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
