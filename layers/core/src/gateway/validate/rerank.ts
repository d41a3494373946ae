/**
 * POST /v1/rerank (SPEC "Endpoints" and "Rerank result"): the request rules, and the answer's
 * results sorted by relevance, most relevant first.
 */
import * as z from 'zod';
import { integerAtLeast, isRecord, nonEmptyString, parseRequestBody, typeMessage } from './common.ts';

const document = z.union([z.string(), z.looseObject({ text: z.string() })], {
  error: typeMessage('must be a string or an object with text'),
});

export const rerankRequestSchema = z.looseObject({
  model: nonEmptyString(),
  query: nonEmptyString(),
  documents: z.array(document).min(1, { error: 'must have at least 1 document' }),
  top_n: integerAtLeast(1).optional(),
  return_documents: z.boolean().optional(),
  max_tokens_per_doc: integerAtLeast(1).optional(),
  // Provider-specific, passed on as they are.
  priority: z.number().optional(),
  rank_fields: z.array(z.string()).optional(),
  truncation: z.boolean().optional(),
  parameters: z.looseObject({}).optional(),
});

export type RerankRequest = z.output<typeof rerankRequestSchema>;

export function parseRerankRequest(body: unknown): RerankRequest {
  return parseRequestBody(rerankRequestSchema, body);
}

const score = (r: unknown): number => (isRecord(r) && typeof r.relevance_score === 'number' ? r.relevance_score : -Infinity);

/** The rerank answer as SPEC.md shows it: `object: "list"`, results by relevance descending, `provider`. */
export function sortRerankAnswer(answer: Record<string, unknown>, provider: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { object: 'list', ...answer };
  if (Array.isArray(answer.results)) {
    // A stable sort keeps the provider's order among equal scores.
    out.results = [...(answer.results as unknown[])].sort((a, b) => score(b) - score(a));
  }
  if (out.provider === undefined && provider) out.provider = provider;
  return out;
}
