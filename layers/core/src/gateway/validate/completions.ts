/**
 * POST /v1/completions (SPEC "Text completion request" and "Limits"). Objects are loose: fields we
 * do not know pass to the provider untouched.
 */
import * as z from 'zod';
import {
  checkStreamOptions,
  integer,
  integerAtLeast,
  integerBetween,
  isRecord,
  logitBias,
  nonEmptyString,
  numberBetween,
  parseRequestBody,
  stopSequences,
  streamOptions,
  typeMessage,
} from './common.ts';

const token = integer();

/** A string, strings, tokens, or token arrays. */
const prompt = z.union([z.string(), z.array(z.string()), z.array(token), z.array(z.array(token))], {
  error: typeMessage('must be a string, an array of strings, an array of tokens or an array of token arrays'),
});

const shape = z.looseObject({
  model: nonEmptyString(),
  prompt,
  best_of: integerBetween(0, 20).nullish(),
  echo: z.boolean().nullish(),
  frequency_penalty: numberBetween(-2, 2).nullish(),
  presence_penalty: numberBetween(-2, 2).nullish(),
  logit_bias: logitBias.nullish(),
  logprobs: integerBetween(0, 5).nullish(),
  max_tokens: integerAtLeast(0).nullish(),
  n: integerBetween(1, 128).nullish(),
  seed: integer().nullish(),
  stop: stopSequences.nullish(),
  stream: z.boolean().nullish(),
  stream_options: streamOptions.nullish(),
  suffix: z.string().nullish(),
  temperature: numberBetween(0, 2).nullish(),
  top_p: numberBetween(0, 1).nullish(),
  user: z.string().optional(),
});

export const completionRequestSchema = shape.superRefine(
  (req, ctx) => {
    checkStreamOptions(req, ctx);
    const bestOf: unknown = req.best_of;
    if (typeof bestOf === 'number') {
      if (req.stream === true) {
        ctx.addIssue({ code: 'custom', path: ['best_of'], message: 'cannot be used when stream is true (the candidates are not streamable)' });
      }
      const n: unknown = req.n;
      if (typeof n === 'number' && Number.isInteger(bestOf) && bestOf <= n) {
        ctx.addIssue({ code: 'custom', path: ['best_of'], message: `must be greater than n (${n})` });
      }
    }
  },
  { when: (payload) => isRecord(payload.value) },
);

export type CompletionRequest = z.output<typeof completionRequestSchema>;

export function parseCompletionRequest(body: unknown): CompletionRequest {
  return parseRequestBody(completionRequestSchema, body);
}
