/**
 * POST /v1/rerank (docs/design/spec.md#request-limits and #answers-gantry-shapes): the request rules, and the answer's
 * results sorted by relevance, most relevant first.
 */
import * as z from 'zod/mini';
import { isRecord } from '../../http/json.ts';
import { integerAtLeast, nonEmptyString, parseRequestBody, typeMessage } from './common.ts';

const document = z.union([z.string(), z.looseObject({ text: z.string() })], {
  error: typeMessage('must be a string or an object with text'),
});

export const rerankRequestSchema = z.looseObject({
  model: nonEmptyString(),
  query: nonEmptyString(),
  documents: z.array(document).check(z.minLength(1, { error: 'must have at least 1 document' })),
  top_n: z.optional(integerAtLeast(1)),
  return_documents: z.optional(z.boolean()),
  max_tokens_per_doc: z.optional(integerAtLeast(1)),
  // Provider-specific, passed on as they are.
  priority: z.optional(z.number()),
  rank_fields: z.optional(z.array(z.string())),
  truncation: z.optional(z.boolean()),
  parameters: z.optional(z.looseObject({})),
});

export type RerankRequest = z.output<typeof rerankRequestSchema>;

export function parseRerankRequest(body: unknown): RerankRequest {
  return parseRequestBody(rerankRequestSchema, body);
}

const score = (r: unknown): number => (isRecord(r) && typeof r.relevance_score === 'number' ? r.relevance_score : -Infinity);

/** The rerank answer as docs/design/spec.md#answers-gantry-shapes shows it: `object: "list"`, results by relevance descending, `provider`. */
export function sortRerankAnswer(answer: Record<string, unknown>, provider: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { object: 'list', ...answer };
  if (Array.isArray(answer.results)) {
    // A stable sort keeps the provider's order among equal scores.
    out.results = [...(answer.results as unknown[])].sort((a, b) => score(b) - score(a));
  }
  if (out.provider === undefined && provider) out.provider = provider;
  return out;
}
