/** POST /v1/responses: OpenAI's request rules (and SPEC's sampling limits). Unknown fields pass through. */
import * as z from 'zod';
import {
  checkStreamOptions,
  integerAtLeast,
  integerBetween,
  isRecord,
  metadata,
  nonEmptyString,
  numberBetween,
  parseRequestBody,
  streamOptions,
  typeMessage,
} from './common.ts';

export const responseRequestSchema = z
  .looseObject({
    model: nonEmptyString().optional(),
    input: z.union([z.string(), z.array(z.unknown())], { error: typeMessage('must be a string or an array of input items') }).optional(),
    instructions: z.string().nullish(),
    previous_response_id: z.string().nullish(),
    stream: z.boolean().nullish(),
    stream_options: streamOptions.nullish(),
    background: z.boolean().nullish(),
    store: z.boolean().nullish(),
    temperature: numberBetween(0, 2).nullish(),
    top_p: numberBetween(0, 1).nullish(),
    top_logprobs: integerBetween(0, 20).nullish(),
    max_output_tokens: integerAtLeast(1).nullish(),
    max_tool_calls: integerAtLeast(1).nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    tools: z.array(z.looseObject({ type: z.string() })).optional(),
    truncation: z.enum(['auto', 'disabled']).nullish(),
    metadata: metadata.nullish(),
    user: z.string().optional(),
  })
  .superRefine((req, ctx) => checkStreamOptions(req, ctx), { when: (payload) => isRecord(payload.value) });

export type ResponseRequest = z.output<typeof responseRequestSchema>;

export function parseResponseRequest(body: unknown): ResponseRequest {
  return parseRequestBody(responseRequestSchema, body);
}
