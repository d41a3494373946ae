/**
 * POST /v1/batches (docs/design/spec.md#request-limits): the input file, the endpoint its lines call, the
 * completion window (`24h`, or `immediate` for a batch the gateway runs itself), and metadata of at most 16 pairs (keys up to 64 and values up to
 * 512 characters).
 */
import * as z from 'zod/mini';
import { metadata, nonEmptyString, parseRequestBody } from './common.ts';

export const batchRequestSchema = z.looseObject({
  input_file_id: nonEmptyString(),
  endpoint: nonEmptyString().check(z.regex(/^\/v1\/\S+$/, { error: 'must be an endpoint path such as /v1/chat/completions' })),
  completion_window: z.enum(['24h', 'immediate'], { error: 'must be 24h (or immediate, for a batch run by the gateway)' }),
  metadata: z.nullish(metadata),
});

export type BatchRequest = z.output<typeof batchRequestSchema>;

export function parseBatchRequest(body: unknown): BatchRequest {
  return parseRequestBody(batchRequestSchema, body);
}
