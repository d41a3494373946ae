/** POST /v1/responses: OpenAI's request rules (and the sampling limits of docs/design/spec.md#request-limits). Unknown fields pass through. */
import * as z from 'zod/mini';
import { isRecord } from '../../http/json.ts';
import {
  checkStreamOptions,
  integerAtLeast,
  integerBetween,
  metadata,
  nonEmptyString,
  numberBetween,
  parseRequestBody,
  streamOptions,
  typeMessage,
} from './common.ts';

export const responseRequestSchema = z
  .looseObject({
    model: z.optional(nonEmptyString()),
    input: z.optional(z.union([z.string(), z.array(z.unknown())], { error: typeMessage('must be a string or an array of input items') })),
    instructions: z.nullish(z.string()),
    previous_response_id: z.nullish(z.string()),
    stream: z.nullish(z.boolean()),
    stream_options: z.nullish(streamOptions),
    background: z.nullish(z.boolean()),
    store: z.nullish(z.boolean()),
    temperature: z.nullish(numberBetween(0, 2)),
    top_p: z.nullish(numberBetween(0, 1)),
    top_logprobs: z.nullish(integerBetween(0, 20)),
    max_output_tokens: z.nullish(integerAtLeast(1)),
    max_tool_calls: z.nullish(integerAtLeast(1)),
    parallel_tool_calls: z.nullish(z.boolean()),
    tools: z.optional(z.array(z.looseObject({ type: z.string() }))),
    truncation: z.nullish(z.enum(['auto', 'disabled'])),
    metadata: z.nullish(metadata),
    user: z.optional(z.string()),
  })
  .check(z.superRefine((req, ctx) => checkStreamOptions(req, ctx), { when: (payload) => isRecord(payload.value) }));

export type ResponseRequest = z.output<typeof responseRequestSchema>;

export function parseResponseRequest(body: unknown): ResponseRequest {
  return parseRequestBody(responseRequestSchema, body);
}
