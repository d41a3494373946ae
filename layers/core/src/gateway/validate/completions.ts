/**
 * POST /v1/completions (docs/design/spec.md#request-limits). Objects are loose: fields we
 * do not know pass to the provider untouched.
 */
import * as z from 'zod/mini';
import { isRecord } from '../../http/json.ts';
import {
  checkStreamOptions,
  integer,
  integerAtLeast,
  integerBetween,
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
  best_of: z.nullish(integerBetween(0, 20)),
  echo: z.nullish(z.boolean()),
  frequency_penalty: z.nullish(numberBetween(-2, 2)),
  presence_penalty: z.nullish(numberBetween(-2, 2)),
  logit_bias: z.nullish(logitBias),
  logprobs: z.nullish(integerBetween(0, 5)),
  max_tokens: z.nullish(integerAtLeast(0)),
  n: z.nullish(integerBetween(1, 128)),
  seed: z.nullish(integer()),
  stop: z.nullish(stopSequences),
  stream: z.nullish(z.boolean()),
  stream_options: z.nullish(streamOptions),
  suffix: z.nullish(z.string()),
  temperature: z.nullish(numberBetween(0, 2)),
  top_p: z.nullish(numberBetween(0, 1)),
  user: z.optional(z.string()),
});

export const completionRequestSchema = shape.check(
  z.superRefine(
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
  ),
);

export type CompletionRequest = z.output<typeof completionRequestSchema>;

export function parseCompletionRequest(body: unknown): CompletionRequest {
  return parseRequestBody(completionRequestSchema, body);
}
